"""DuckDB relations in and out of the lazy allocation core (:mod:`gpucost.core.lazy_allocation`).

The lazy core reads and writes each amount as two ``BIGINT`` columns, ``<name>_whole`` (truncated
toward zero) and ``<name>_frac`` (the rest in 1e-18 units, same sign); the warehouse keeps money as
``DECIMAL(38, 18)``. :func:`to_lazy` and :func:`from_lazy` convert between the two inside DuckDB,
with decimal arithmetic only (no float: DuckDB's decimal division returns DOUBLE, so the value is
rebuilt by multiplying the fraction by a ``DECIMAL(18, 18)`` 1e-18), so a dbt Python model hands
relations to the core and gets a relation back without materialising rows in Python.

An amount whose whole part does not fit a ``BIGINT`` (beyond about 9.2e18) fails the conversion
with DuckDB's conversion error rather than losing digits.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import duckdb
import narwhals as nw
import pyarrow as pa

from gpucost.core.lazy_allocation import WeightBoundError
from gpucost.engines.arrow_io import MONEY, config_text

MONEY_SQL = "DECIMAL(38, 18)"
_UNIT_SQL = "CAST('0.000000000000000001' AS DECIMAL(18, 18))"
_SQL_TYPES: dict[pa.DataType, str] = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    MONEY: MONEY_SQL,
}


def quote(name: str) -> str:
    """A SQL identifier, double-quoted."""
    return '"' + name.replace('"', '""') + '"'


def money_parts_sql(column: str) -> tuple[str, str]:
    """SQL for the (whole, frac) ``BIGINT`` pair of a decimal column: whole truncated toward zero,
    frac the rest in 1e-18 units with the same sign (as :func:`lazy_allocation.money_columns`)."""
    value = f"CAST({quote(column)} AS {MONEY_SQL})"
    whole = f"trunc({value})"
    return (
        f"CAST({whole} AS BIGINT)",
        f"CAST(({value} - {whole}) * 1000000000000000000 AS BIGINT)",
    )


def money_value_sql(whole: str, frac: str) -> str:
    """SQL for the ``DECIMAL(38, 18)`` value ``whole + frac * 1e-18`` of two ``BIGINT`` columns
    (exact: a decimal product of scale 18, never a division)."""
    return (
        f"CAST(CAST({quote(whole)} AS {MONEY_SQL})"
        f" + CAST({quote(frac)} AS DECIMAL(19, 0)) * {_UNIT_SQL} AS {MONEY_SQL})"
    )


def to_lazy(relation: duckdb.DuckDBPyRelation, money: Sequence[str]) -> nw.LazyFrame:
    """``relation`` as a narwhals LazyFrame for the lazy core, each column named in ``money``
    replaced (in place) by its ``<name>_whole`` / ``<name>_frac`` pair; other columns unchanged."""
    columns = list(relation.columns)
    missing = [name for name in money if name not in columns]
    if missing:
        raise ValueError(f"money columns {missing} not in the relation's {columns}")
    select: list[str] = []
    for name in columns:
        if name in money:
            whole, frac = money_parts_sql(name)
            select += [f"{whole} AS {quote(name + '_whole')}", f"{frac} AS {quote(name + '_frac')}"]
        else:
            select.append(quote(name))
    return nw.from_native(relation.project(", ".join(select)))


def list_elements(
    relation: duckdb.DuckDBPyRelation,
    key: str,
    column: str,
    position: str = "scope_rank",
    value: str = "scope_key",
) -> nw.LazyFrame:
    """The long frame of a list column for the lazy core: one row per element, ``key``, its
    1-based ``position`` in the list (``BIGINT``) and the element as ``value``; an empty or null
    list has no rows (as the row core's ``row[column] or ()``)."""
    return nw.from_native(
        relation.project(
            f"{quote(key)}, generate_subscripts({quote(column)}, 1) AS {quote(position)},"
            f" unnest({quote(column)}) AS {quote(value)}"
        )
    )


def from_lazy(
    frame: nw.LazyFrame, schema: pa.Schema, order_by: Sequence[str] = ()
) -> duckdb.DuckDBPyRelation:
    """The DuckDB relation of a lazy-core result with exactly ``schema``'s columns, in its order
    and types: a ``decimal128(38, 18)`` field is rebuilt from ``<name>_whole`` / ``<name>_frac``,
    any other field is cast to its SQL type. Rows are sorted by ``order_by`` (nulls first)."""
    relation = frame.to_native()
    if not isinstance(relation, duckdb.DuckDBPyRelation):
        raise TypeError(f"from_lazy takes a frame on DuckDB, not {type(relation).__name__}")
    select: list[str] = []
    for field in schema:
        sql_type = _SQL_TYPES.get(field.type)
        if sql_type is None:
            raise TypeError(f"no SQL type for {field.name}: {field.type}")
        if sql_type == MONEY_SQL:
            expr = money_value_sql(field.name + "_whole", field.name + "_frac")
        else:
            expr = f"CAST({quote(field.name)} AS {sql_type})"
        select.append(f"{expr} AS {quote(field.name)}")
    out = relation.project(", ".join(select))
    if order_by:
        out = out.order(", ".join(f"{quote(name)} NULLS FIRST" for name in order_by))
    return out


LAZY_MIN_ROWS = 1_000_000
"""Inputs of at least this many rows go to the lazy core (dbt var ``gpucost_lazy_min_rows``)."""


def input_rows(*relations: duckdb.DuckDBPyRelation) -> int:
    """The rows of a model's inputs, counted inside DuckDB."""
    return sum(int(r.aggregate("count(*)").fetchall()[0][0]) for r in relations)


def lazy_or_rows(
    lazy: Callable[[], duckdb.DuckDBPyRelation],
    rows: Callable[[], pa.Table],
    model: str,
    size: int,
    min_rows: int | None = LAZY_MIN_ROWS,
) -> duckdb.DuckDBPyRelation | pa.Table:
    """A dbt Python model's result from its lazy core or its row core; both are exact and equal.

    The lazy core (relations in, a relation out, no rows in Python) runs when the inputs hold at
    least ``min_rows`` rows (``size``): its plans cost a few seconds whatever the data, the row core
    costs per row. It also hands over to the row core when a split is beyond the lazy core's exact
    bound (:class:`gpucost.core.lazy_allocation.WeightBoundError`); the row core is exact at any
    size,
    only slower. The choice is printed to the dbt log, with the reason.
    """
    if min_rows is None or size < min_rows:
        bound = "never lazy" if min_rows is None else f"below lazy_min_rows {min_rows:,}"
        print(f"{model}: row core ({size:,} input rows, {bound})", file=sys.stderr, flush=True)
        return rows()
    print(f"{model}: lazy core ({size:,} input rows >= {min_rows:,})", file=sys.stderr, flush=True)
    try:
        return lazy()
    except WeightBoundError as exc:
        print(f"{model}: {exc}; running the row core instead", file=sys.stderr, flush=True)
        return rows()


def lazy_min_rows(value: object) -> int | None:
    """A model's ``lazy_min_rows`` config value (var ``gpucost_lazy_min_rows``; empty: never lazy).

    The model must read it itself, ``lazy_min_rows(dbt.config.get("lazy_min_rows"))``: dbt hands a
    Python model only the config keys it finds as literal ``dbt.config.get`` calls in the model's
    own file (a call made in a helper, or nested in an expression other than a call's argument,
    is not seen, and ``get`` then returns None)."""
    text = config_text(value)
    return None if text is None else int(text)
