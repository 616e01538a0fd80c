"""PySpark DataFrames in and out of the lazy allocation cores: the Databricks side of
:mod:`gpucost.engines.lazy_io`.

On Databricks (dbt-databricks), a Python model's ``dbt.ref()`` is a PySpark DataFrame. The lazy
cores (:mod:`gpucost.core.lazy_allocation`, :mod:`gpucost.core.lazy_node_parts`) run on it
unchanged; this
module does the money at the boundary, as :mod:`gpucost.engines.lazy_io` does for DuckDB:
``DECIMAL(38, 18)`` columns to the cores' ``<name>_whole`` / ``<name>_frac`` ``BIGINT`` pairs and
back, in Spark decimal arithmetic only, never a double.

Spark widens decimal results beyond 38 digits by dropping scale (an 18-place sum of two
``DECIMAL(38, 18)`` loses its last place), so every step here is typed to stay within 38 digits: the
value as ``DECIMAL(37, 18)``, its fraction as ``DECIMAL(18, 18)``, the fraction times 1e18 (a
``DECIMAL(19, 0)``), and back as ``DECIMAL(19, 0) + DECIMAL(19, 18)``. dbt-spark runs with ANSI mode
off, where casting a decimal beyond 64 bits to ``BIGINT`` wraps around silently: :func:`to_lazy`
range-checks every amount first and fails with the column's name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import narwhals as nw
import pyarrow as pa

from gpucost.engines.arrow_io import MONEY

_SPARK_TYPES: dict[pa.DataType, str] = {
    pa.string(): "string",
    pa.int64(): "bigint",
    pa.float64(): "double",
    pa.bool_(): "boolean",
    MONEY: "decimal(38,18)",
}
_UNIT = "0.000000000000000001"
_INT64_LIMIT = str(2**63 - 1)


def to_lazy(frame: Any, money: Sequence[str]) -> nw.LazyFrame:
    """A PySpark DataFrame as a narwhals LazyFrame for the lazy cores, each column named in
    ``money`` replaced (in place) by its ``<name>_whole`` / ``<name>_frac`` pair (whole truncated
    toward zero, frac the rest in 1e-18 units with the same sign). An amount beyond the cores'
    9.2e18 fails here with its column's name."""
    from pyspark.sql import functions as F

    missing = [name for name in money if name not in frame.columns]
    if missing:
        raise ValueError(f"money columns {missing} not in the DataFrame's {frame.columns}")
    parts = {name: _money_parts(F.col(name)) for name in money}
    if money:
        lost = frame.select(
            *(
                F.sum(F.when(F.col(n).isNotNull() & whole.isNull(), 1).otherwise(0)).alias(n)
                for n, (whole, _) in parts.items()
            )
        ).collect()[0]
        for name in money:
            if lost[name]:
                raise ValueError(
                    f"{name}: {lost[name]} amounts do not fit the lazy core's 64-bit whole part"
                    " (|amount| >= 9.2e18); use gpucost.core.allocation"
                )
    columns = []
    for name in frame.columns:
        if name in parts:
            whole, frac = parts[name]
            columns += [whole.alias(f"{name}_whole"), frac.alias(f"{name}_frac")]
        else:
            columns.append(F.col(name))
    out = frame.select(*columns)
    return nw.from_native(out)


def _money_parts(column: Any) -> tuple[Any, Any]:
    """The (whole, frac) ``BIGINT`` columns of a decimal column (null when beyond 64 bits)."""
    from pyspark.sql import functions as F

    # Spark's non-ANSI cast of a decimal beyond 64 bits to BIGINT wraps around: range-check first
    in_range = F.abs(column.cast("decimal(38,18)")) < F.lit(_INT64_LIMIT).cast("decimal(19,0)")
    value = F.when(in_range, column.cast("decimal(37,18)"))
    whole = value.cast("bigint")
    fraction = (value - whole.cast("decimal(37,18)")).cast("decimal(18,18)")
    return whole, (fraction * F.lit(10**18).cast("decimal(19,0)")).cast("bigint")


def money_value(whole: str, frac: str) -> Any:
    """The ``DECIMAL(38, 18)`` column ``whole + frac * 1e-18`` of two ``BIGINT`` columns."""
    from pyspark.sql import functions as F

    fraction = (F.col(frac).cast("decimal(19,0)") * F.lit(_UNIT).cast("decimal(18,18)")).cast(
        "decimal(19,18)"
    )
    return (F.col(whole).cast("decimal(19,0)") + fraction).cast("decimal(38,18)")


def from_lazy(frame: nw.LazyFrame, schema: pa.Schema, order_by: Sequence[str] = ()) -> Any:
    """The PySpark DataFrame of a lazy-core result with exactly ``schema``'s columns, in its order
    and types: a ``decimal128(38, 18)`` field rebuilt from ``<name>_whole`` / ``<name>_frac``, any
    other cast to its Spark type; sorted by ``order_by`` (nulls first)."""
    from pyspark.sql import functions as F

    native = frame.to_native()
    if not hasattr(native, "localCheckpoint"):
        raise TypeError(f"spark_io.from_lazy takes a frame on PySpark, not {type(native).__name__}")
    columns = []
    for field in schema:
        spark_type = _SPARK_TYPES.get(field.type)
        if spark_type is None:
            raise TypeError(f"no Spark type for {field.name}: {field.type}")
        if field.type == MONEY:
            column = money_value(f"{field.name}_whole", f"{field.name}_frac")
        else:
            column = F.col(field.name).cast(spark_type)
        columns.append(column.alias(field.name))
    out = native.select(*columns)
    if order_by:
        out = out.orderBy(*(F.col(name).asc_nulls_first() for name in order_by))
    return out
