"""Engine frames in and out of the allocation core (:mod:`gpucost.core`), and the one dispatch
helper every allocation Python model calls (:func:`allocate`).

The core reads and writes each amount as two ``BIGINT`` columns, ``<name>_whole`` (truncated
toward zero) and ``<name>_frac`` (the rest in 1e-18 units, same sign); the warehouse keeps money as
``DECIMAL(38, 18)``. :func:`to_lazy` and :func:`from_lazy` convert between the two inside the
engine, in decimal arithmetic only, never a double, for both engines a dbt Python model hands over:

* a DuckDB relation (dbt-duckdb): the conversion runs in DuckDB SQL, then the rows go to a Polars
  LazyFrame, the core's engine there (why: :mod:`gpucost.core`), and the result comes back through
  DuckDB as an Arrow table for dbt-duckdb to write. DuckDB's decimal division returns DOUBLE, so a
  value is rebuilt by multiplying the fraction by a ``DECIMAL(18, 18)`` 1e-18; a whole part beyond
  ``BIGINT`` (about 9.2e18) fails with DuckDB's conversion error rather than losing digits;
* a PySpark DataFrame (dbt-databricks): Spark widens decimal results beyond 38 digits by dropping
  scale, so every step is typed to stay within 38 digits (the value as ``DECIMAL(37, 18)``, its
  fraction ``DECIMAL(18, 18)``, times 1e18 a ``DECIMAL(19, 0)``, back as ``DECIMAL(19, 0) +
  DECIMAL(19, 18)``); with ANSI mode off a cast beyond 64 bits to ``BIGINT`` wraps around silently,
  so every amount is range-checked first and fails with its column's name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import CodeType
from typing import Any

import duckdb
import narwhals as nw
import polars as pl
import pyarrow as pa

from gpucost.core.split import WeightBoundError
from gpucost.engines.arrow_io import MONEY
from gpucost.engines.reuse import COLUMNS as reuse_columns
from gpucost.engines.reuse import Reuse, keyed_output, quote, reuse_lines, salt

MONEY_SQL = "DECIMAL(38, 18)"
_UNIT_SQL = "CAST('0.000000000000000001' AS DECIMAL(18, 18))"
_TYPES: dict[pa.DataType, tuple[str, str]] = {
    # arrow type: (DuckDB type, Spark type)
    pa.string(): ("VARCHAR", "string"),
    pa.int64(): ("BIGINT", "bigint"),
    pa.float64(): ("DOUBLE", "double"),
    pa.bool_(): ("BOOLEAN", "boolean"),
    MONEY: (MONEY_SQL, "decimal(38,18)"),
}
_INT64_LIMIT = str(2**63 - 1)


@dataclass(frozen=True)
class Lines:
    """A model input that :func:`allocate` may hand the core a part at a time: an engine frame (a
    DuckDB relation or PySpark DataFrame), its money columns (as for :func:`to_lazy`) and the column
    naming each row's bill line (``line_key``), or the group of lines the core computes together
    (int_gpu_idle_costs_spread: the cluster-day). Rows of one key always fall in the same part, so a
    core whose every line (or group) is computed from its own rows alone gives the same rows in
    parts."""

    native: Any
    money: Sequence[str] = ()
    line_key: str = "charge_id"
    read: Callable[[Any], nw.LazyFrame] | None = None
    """How the core reads the frame (or a part of it): :func:`to_lazy` with ``money`` by default."""

    def lazy(self, native: Any = None) -> nw.LazyFrame:
        """The core's frame of ``native`` (a part of this input; default: all of it)."""
        native = self.native if native is None else native
        return self.read(native) if self.read else to_lazy(native, self.money)


def allocate(
    model: str,
    core: Callable[..., nw.LazyFrame],
    schema: pa.Schema,
    order_by: Sequence[str],
    *frames: nw.LazyFrame | Lines,
    session: Any = None,
    rows_per_part: int | None = None,
    reuse: Reuse | None = None,
    **options: Any,
) -> Any:
    """A dbt Python model's result: ``core(*frames, **options)`` as the engine's own frame (a DuckDB
    relation or a PySpark DataFrame) with exactly ``schema``'s columns, sorted by ``order_by``.

    ``session`` is the model's own connection (dbt's second argument to ``model``; dbt-duckdb's
    cursor wrapper or a DuckDB connection, :func:`duckdb_connection`): on DuckDB the result is then
    a relation of that connection, which dbt-duckdb writes in one pass under the profile's
    ``memory_limit`` (:func:`from_lazy`).

    A frame given as :class:`Lines` is read by line: on DuckDB with ``session`` and
    ``rows_per_part``, when the largest such input has more rows than that, the core runs once per
    part of the lines (each line's rows hashed by its key into one of ``ceil(rows /
    rows_per_part)`` parts; every other frame whole in each run), so its working memory is a
    part's, not the month's; the parts' rows are then written as one table. Only for cores that
    compute each key's rows from those rows alone (the node prorations by line, the idle spread by
    cluster-day): the result is the same rows (tests/python/test_engine_io.py). Elsewhere (PySpark,
    no ``rows_per_part``) a :class:`Lines` frame is read whole.

    With ``reuse`` (:class:`gpucost.engines.reuse.Reuse`; every input a :class:`Lines` of one key),
    the rows also carry ``input_key`` and ``input_fingerprint``, and on DuckDB the core runs only on
    the lines whose inputs changed since ``reuse.previous`` (the model's table) was built, whose
    stale rows are deleted: dbt then inserts what this returns (:mod:`gpucost.engines.reuse`).
    Elsewhere every line is computed and the two columns are null.

    A split beyond the core's exact bound fails the model with one line naming it and the bound
    (:class:`gpucost.core.split.WeightBoundError`), never a rounded or wrapped amount.
    """
    try:
        if reuse is None:
            return _allocate(core, schema, order_by, frames, session, rows_per_part, options)
        connection = duckdb_connection(session)
        if connection is None:
            # another engine (PySpark): every line computed, the two columns present and null
            from pyspark.sql import functions as F

            out = _allocate(core, schema, order_by, frames, session, rows_per_part, options)
            return out.select(
                "*", *(F.lit(None).cast("string").alias(name) for name in reuse_columns)
            )
        lines = [f for f in frames if isinstance(f, Lines)]
        keys = {f.line_key for f in lines}
        # every other positional argument is a setting (the idle policy), part of every digest
        settings = [f for f in frames if not isinstance(f, Lines)]
        if len(keys) != 1 or any(not isinstance(f, str | int | float | None) for f in settings):
            raise ValueError(f"{model}: reuse needs every input read by one line key, got {keys}")
        plan = reuse_lines(
            connection,
            model,
            [f.native for f in lines],
            keys.pop(),
            reuse.previous,
            # a reader's code (a model's own read function) decides what the core sees of a line
            salt(
                model,
                {**options, "settings": settings, "readers": [_code(f.read) for f in lines]},
                schema,
            ),
        )
        plan.report(model)
        # every line to compute (a full build): the inputs as they are, without the filter
        todo = [
            _only(f, plan.todo) if isinstance(f, Lines) and not plan.full else f for f in frames
        ]
        out = _allocate(core, schema, (), todo, session, rows_per_part, options)
        return keyed_output(out, reuse, plan.fingerprints, connection, order_by)
    except WeightBoundError as exc:
        raise WeightBoundError(f"{model}: {exc}") from None


def _allocate(
    core: Callable[..., nw.LazyFrame],
    schema: pa.Schema,
    order_by: Sequence[str],
    frames: Sequence[nw.LazyFrame | Lines],
    session: Any,
    rows_per_part: int | None,
    options: dict[str, Any],
) -> Any:
    """The core's rows over ``frames``, a part of the lines at a time (see :func:`allocate`)."""
    parts = _part_count(frames, session, rows_per_part)
    if parts == 1:
        inputs = [f.lazy() if isinstance(f, Lines) else f for f in frames]
        return from_lazy(core(*inputs, **options), schema, order_by, session)
    rows = []
    for part in range(parts):
        inputs = [_part(f, part, parts) if isinstance(f, Lines) else f for f in frames]
        rows.append(core(*inputs, **options).to_native().collect())
    return from_lazy(nw.from_native(pl.concat(rows).lazy()), schema, order_by, session)


def _code(function: Callable[..., Any] | None) -> str | None:
    """A function's compiled code, constants and names as text, the same in every process (a
    nested function's code object is spelled out, not shown by its address); None: no function."""

    def text(code: CodeType) -> str:
        consts = (text(c) if isinstance(c, CodeType) else repr(c) for c in code.co_consts)
        return code.co_code.hex() + "|".join(consts) + repr(code.co_names)

    return None if function is None else text(function.__code__)


def _only(frame: Lines, todo: str) -> Lines:
    """``frame`` with the rows of the lines named in the temp table ``todo`` only."""
    key = quote(frame.line_key)
    native = frame.native.filter(f"cast({key} as varchar) in (select input_key from {todo})")
    return replace(frame, native=native)


def duckdb_connection(session: Any) -> duckdb.DuckDBPyConnection | None:
    """The DuckDB connection of a Python model's ``session``, or None on another engine.

    dbt-duckdb does not hand a model its ``DuckDBPyConnection`` but a wrapper of it
    (``DuckDBCursorWrapper``: it forwards every attribute to the connection it holds as
    ``_cursor``, and only wraps ``execute``'s errors); tests and scripts may pass the connection
    itself."""
    if isinstance(session, duckdb.DuckDBPyConnection):
        return session
    inner = getattr(session, "_cursor", None) if session is not None else None
    return inner if isinstance(inner, duckdb.DuckDBPyConnection) else None


def _part_count(
    frames: Sequence[nw.LazyFrame | Lines], session: Any, rows_per_part: int | None
) -> int:
    """How many parts :func:`allocate` runs the core in: 1 unless on DuckDB with ``session`` and
    ``rows_per_part`` (a positive whole number, or its text; null: no parts), else enough that the
    largest :class:`Lines` input has at most that many rows a part on average."""
    lines = [f for f in frames if isinstance(f, Lines)]
    if rows_per_part in (None, "", "None"):  # a null var, as dbt renders it into a model's config
        return 1
    if not str(rows_per_part).isdigit() or int(rows_per_part) < 1:
        raise ValueError(f"rows_per_part must be a positive whole number, got {rows_per_part!r}")
    if not lines or duckdb_connection(session) is None:
        return 1
    largest = max(f.native.aggregate("count(*)").fetchall()[0][0] for f in lines)
    return max(1, math.ceil(largest / int(rows_per_part)))


def _part(frame: Lines, part: int, parts: int) -> nw.LazyFrame:
    """The rows of ``frame`` whose line key hashes into ``part`` of ``parts``, for the core."""
    return frame.lazy(frame.native.filter(f"hash({quote(frame.line_key)}) % {parts} = {part}"))


def _is_duckdb(native: Any) -> bool:
    return isinstance(native, duckdb.DuckDBPyRelation)


def _is_polars(native: Any) -> bool:
    return isinstance(native, pl.LazyFrame)


def _to_polars(relation: duckdb.DuckDBPyRelation) -> nw.LazyFrame:
    """A DuckDB relation's rows as a Polars LazyFrame for the core (the DuckDB target's engine)."""
    return nw.from_native(pl.from_arrow(relation.to_arrow_table()).lazy())


def money_parts_sql(column: str) -> tuple[str, str]:
    """DuckDB SQL for the (whole, frac) ``BIGINT`` pair of a decimal column: whole truncated toward
    zero, frac the rest in 1e-18 units with the same sign."""
    value = f"CAST({quote(column)} AS {MONEY_SQL})"
    whole = f"trunc({value})"
    return (
        f"CAST({whole} AS BIGINT)",
        f"CAST(({value} - {whole}) * 1000000000000000000 AS BIGINT)",
    )


def money_value_sql(whole: str, frac: str) -> str:
    """DuckDB SQL for the ``DECIMAL(38, 18)`` value ``whole + frac * 1e-18`` of two ``BIGINT``
    columns (exact: a decimal product of scale 18, never a division)."""
    return (
        f"CAST(CAST({quote(whole)} AS {MONEY_SQL})"
        f" + CAST({quote(frac)} AS DECIMAL(19, 0)) * {_UNIT_SQL} AS {MONEY_SQL})"
    )


def _spark_money_parts(column: Any) -> tuple[Any, Any]:
    """The (whole, frac) ``BIGINT`` Spark columns of a decimal column (null beyond 64 bits)."""
    from pyspark.sql import functions as F

    in_range = F.abs(column.cast("decimal(38,18)")) < F.lit(_INT64_LIMIT).cast("decimal(19,0)")
    value = F.when(in_range, column.cast("decimal(37,18)"))
    whole = value.cast("bigint")
    fraction = (value - whole.cast("decimal(37,18)")).cast("decimal(18,18)")
    return whole, (fraction * F.lit(10**18).cast("decimal(19,0)")).cast("bigint")


def spark_money_value(whole: str, frac: str) -> Any:
    """The ``DECIMAL(38, 18)`` Spark column ``whole + frac * 1e-18`` of two ``BIGINT`` columns."""
    from pyspark.sql import functions as F

    unit = F.lit("0.000000000000000001").cast("decimal(18,18)")
    fraction = (F.col(frac).cast("decimal(19,0)") * unit).cast("decimal(19,18)")
    return (F.col(whole).cast("decimal(19,0)") + fraction).cast("decimal(38,18)")


def to_lazy(native: Any, money: Sequence[str] = ()) -> nw.LazyFrame:
    """A DuckDB relation or PySpark DataFrame as a narwhals LazyFrame for the core, each column
    named in ``money`` replaced (in place) by its ``<name>_whole`` / ``<name>_frac`` pair; other
    columns unchanged."""
    columns = list(native.columns)
    missing = [name for name in money if name not in columns]
    if missing:
        raise ValueError(f"money columns {missing} not in the frame's {columns}")
    if _is_duckdb(native):
        select: list[str] = []
        for name in columns:
            if name in money:
                whole, frac = money_parts_sql(name)
                select += [
                    f"{whole} AS {quote(name + '_whole')}",
                    f"{frac} AS {quote(name + '_frac')}",
                ]
            else:
                select.append(quote(name))
        return _to_polars(native.project(", ".join(select)))
    from pyspark.sql import functions as F

    parts = {name: _spark_money_parts(F.col(name)) for name in money}
    if money:
        lost = native.select(
            *(
                F.sum(F.when(F.col(n).isNotNull() & whole.isNull(), 1).otherwise(0)).alias(n)
                for n, (whole, _) in parts.items()
            )
        ).collect()[0]
        for name in money:
            if lost[name]:
                raise ValueError(
                    f"{name}: {lost[name]} amounts do not fit the core's 64-bit whole part"
                    " (|amount| >= 9.2e18)"
                )
    out = []
    for name in columns:
        if name in parts:
            whole, frac = parts[name]
            out += [whole.alias(f"{name}_whole"), frac.alias(f"{name}_frac")]
        else:
            out.append(F.col(name))
    return nw.from_native(native.select(*out))


def list_elements(
    native: Any, key: str, column: str, position: str = "scope_rank", value: str = "scope_key"
) -> nw.LazyFrame:
    """The long frame of a list column for the core: one row per element, ``key``, its 1-based
    ``position`` in the list (``BIGINT``) and the element as ``value``; an empty or null list has
    no rows."""
    if _is_duckdb(native):
        return _to_polars(
            native.project(
                f"{quote(key)}, generate_subscripts({quote(column)}, 1) AS {quote(position)},"
                f" unnest({quote(column)}) AS {quote(value)}"
            )
        )
    from pyspark.sql import functions as F

    exploded = native.select(F.col(key), F.posexplode(F.col(column)).alias("_pos", value))
    return nw.from_native(
        exploded.select(key, (F.col("_pos") + 1).cast("bigint").alias(position), value)
    )


def from_lazy(
    frame: nw.LazyFrame, schema: pa.Schema, order_by: Sequence[str] = (), session: Any = None
) -> Any:
    """The engine's frame of a core result with exactly ``schema``'s columns, in its order and
    types: a ``decimal128(38, 18)`` field rebuilt from ``<name>_whole`` / ``<name>_frac``, any other
    cast to its engine type. Rows are sorted by ``order_by`` (nulls first).

    A Polars result goes back through DuckDB, whose decimal arithmetic rebuilds the amounts exactly:
    given the model's DuckDB connection (``session``, :func:`duckdb_connection`), as a relation of
    it, so that dbt-duckdb streams the rebuild and the sort into the table under the profile's
    ``memory_limit`` (spilling if it must); without one, through a connection of its own into an
    Arrow table, a second copy of the rows, sorted with no memory limit (measured at 1,000 nodes on
    the CPU and memory proration's 6.3 M rows, run with a plain connection: peak RSS 8.9 -> 6.4 GB,
    106 -> 100 s; docs/benchmarks.md)."""
    native = frame.to_native()
    if _is_polars(native):
        rows = native.collect().to_arrow()
        connection = duckdb_connection(session)
        if connection is not None:
            return from_lazy(nw.from_native(connection.from_arrow(rows)), schema, order_by)
        with duckdb.connect() as con:
            return from_lazy(
                nw.from_native(con.from_arrow(rows)), schema, order_by
            ).to_arrow_table()
    duck = _is_duckdb(native)
    if not duck and not hasattr(native, "localCheckpoint"):
        raise TypeError(
            f"from_lazy takes a DuckDB, Polars or PySpark frame, not {type(native).__name__}"
        )
    for field in schema:
        if field.type not in _TYPES:
            raise TypeError(f"no engine type for {field.name}: {field.type}")
    if duck:
        select = [
            (
                money_value_sql(f"{field.name}_whole", f"{field.name}_frac")
                if field.type == MONEY
                else f"CAST({quote(field.name)} AS {_TYPES[field.type][0]})"
            )
            + f" AS {quote(field.name)}"
            for field in schema
        ]
        out = native.project(", ".join(select))
        if order_by:
            out = out.order(", ".join(f"{quote(name)} NULLS FIRST" for name in order_by))
        return out
    from pyspark.sql import functions as F

    columns = [
        (
            spark_money_value(f"{field.name}_whole", f"{field.name}_frac")
            if field.type == MONEY
            else F.col(field.name).cast(_TYPES[field.type][1])
        ).alias(field.name)
        for field in schema
    ]
    out = native.select(*columns)
    if order_by:
        out = out.orderBy(*(F.col(name).asc_nulls_first() for name in order_by))
    return out
