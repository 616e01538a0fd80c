"""The exact split, written once: every allocation step of :mod:`gpucost.core` is built on it.

Frames are narwhals LazyFrames (Polars inside ``dbt build`` on DuckDB, a PySpark DataFrame on
Databricks), never rows in Python. Money is exact and never float: an amount is two ``Int64``
columns, ``<name>_whole`` (truncated toward zero) and ``<name>_frac`` (the rest in 1e-18 units,
same sign), the ``DECIMAL(38, 18)`` value ``whole + frac * 1e-18``; :mod:`gpucost.engines.lazy_io`
converts at the engine boundary, :func:`money_columns` / :func:`money_value` in Python.

:func:`split_lines` splits each line's amounts over its weight rows by largest remainder in 1e-18
units (every row gets ``floor(amount x w / W)``, the units left go one each to the largest
remainders, ties by the row core's key order, a credit split as its magnitude). On Polars, a line
whose amount x total weight stays below :data:`WIDE_BOUND` (1e38) is divided in one step in
128-bit integers. Every other line, and every line on PySpark (no 128-bit integers), goes by long
division on base-1000 limbs, so no product overflows 64 bits and the only divisions are of an
integer by a divisor of it with a small quotient (engines that divide in double precision are off
by a relative 4e-16 at most, far less than the 0.5 the rounding to an integer forgives). That
bounds a split's total weight (:data:`MAX_TOTAL_WEIGHT`, 4.6e15: about 53 million GPU-days in
milliseconds; beyond it :class:`WeightBoundError`) and an amount's magnitude (9.2e18). The speed of
each is measured in docs/benchmarks.md (the 1,000-node hourly month).

Invariant (property-tested against the reference row core, tests/python/reference): each line's
returned shares sum exactly to the line, a share never has the opposite sign of its line, and the
result does not depend on the order of the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import narwhals as nw

from gpucost.core.money import MONEY_SCALE, from_units, to_units

BASE = 1000
"""Limb base: amounts are split as base-1000 digits."""

LIMBS = 13
"""Digits of an amount: 6 for the 1e-18 fraction, 7 for the whole part (below 1e21 > 2**63)."""

FRACTION_LIMBS = MONEY_SCALE // 3

# The long division's plan is cut (:func:`checkpoint`) after every DIGITS_PER_CUT digit steps and
# once more before the largest-remainder step: engines bind and optimise a plan as a whole, and the
# cost grows faster than its depth (one split of 9 rows on DuckDB: 1.4 s of CPU uncut, 0.7 s cut
# every 4 digits; the idle spread of the demo month 5.3 s against 3.4 s).
DIGITS_PER_CUT = 4
MAX_TOTAL_WEIGHT = (2**63 - 1) // (2 * BASE)
"""The largest total weight a split may have: a long-division step, ``carry x BASE + digit x
weight`` with ``carry < total`` and ``digit < BASE``, stays below ``2 x BASE x total`` <= 2**63."""

MONEY_PARTS = ("whole", "frac")
_FRAC_UNIT = 10**MONEY_SCALE


def money_columns(amount: Decimal | int | str) -> tuple[int, int]:
    """An exact amount as the (whole, frac) integer pair the lazy core reads."""
    units = to_units(amount)
    sign = -1 if units < 0 else 1
    whole, frac = divmod(abs(units), _FRAC_UNIT)
    return sign * whole, sign * frac


def money_value(whole: int, frac: int) -> Decimal:
    """The exact ``Decimal`` of a (whole, frac) pair."""
    return from_units(int(whole) * _FRAC_UNIT + int(frac))


def exact_div(expr: nw.Expr, divisor: nw.Expr | int) -> nw.Expr:
    """``expr // divisor`` for non-negative integers when ``expr`` is a multiple of ``divisor`` and
    the quotient is small (below 2**40 here): true division in double precision is then within
    1e-3 of the integer quotient, which the rounding recovers exactly."""
    return (expr / divisor).round(0).cast(nw.Int64)


def limb(value: nw.Expr, i: int) -> nw.Expr:
    """Base-1000 digit ``i`` of a non-negative Int64 (digit 6 holds everything from 1e18 up)."""
    high = value % (BASE ** (i + 1)) if i + 1 < 7 else value
    low = value % (BASE**i) if i else nw.lit(0, nw.Int64)
    return exact_div(high - low, BASE**i)


def _limbs(value: nw.Expr, count: int, prefix: str) -> list[nw.Expr]:
    """Base-1000 digits of a non-negative Int64 (least significant first)."""
    return [limb(value, i).alias(f"{prefix}{i}") for i in range(count)]


def _each(money: Sequence[str], pres: dict[str, str], make) -> list[nw.Expr]:
    """``make(m, pre)``'s expressions for every amount ``m`` (its scratch prefix ``pre``), flat."""
    return [expr for m in money for expr in make(m, pres[m])]


def _sign(m: str) -> nw.Expr:
    """-1 for a negative amount ``m`` (either part below zero: they share the sign), else 1."""
    negative = (nw.col(f"{m}_whole") < 0) | (nw.col(f"{m}_frac") < 0)
    return nw.when(negative).then(nw.lit(-1)).otherwise(nw.lit(1)).cast(nw.Int64)


def _drop_scratch(rows: nw.LazyFrame, pres: dict[str, str]) -> nw.LazyFrame:
    """``rows`` without the split's scratch columns (those named with a prefix of ``pres``)."""
    scratch = tuple(pres.values())
    return rows.drop([c for c in rows.collect_schema().names() if c.startswith(scratch)])


def _split_money(
    rows: nw.LazyFrame, money: Sequence[str], line_key: str, tie_key: str, weight: str, total: str
) -> nw.LazyFrame:
    """Replace ``<m>_whole`` / ``<m>_frac`` (each line's amount, on each of its weight rows) by the
    row's exact share, for every name in ``money``.

    ``rows``: one row per (line, key) with ``weight`` (> 0) and ``total`` (the line's weight total).
    Largest remainder per line and amount, ties by ``tie_key`` ascending (:func:`_add_left_units`).
    On an engine with 128-bit integers (Polars) a line whose amounts x total weight stay below
    :data:`WIDE_BOUND` is divided in one step (:func:`_split_money_wide`); every other line, and
    every line on other engines (PySpark), by the base-1000 long division
    (:func:`_split_money_limbs`). Both give the same units (tests/python/test_core_split.py).
    """
    if rows.implementation is not nw.Implementation.POLARS:
        return _split_money_limbs(rows, money, line_key, tie_key, weight, total)
    fits = nw.lit(True)
    for m in money:
        whole = nw.col(f"{m}_whole").cast(nw.Int128).abs() + 1  # 128 bits before abs: no wrap
        fits = fits & (whole * nw.col(total).cast(nw.Int128) < WIDE_BOUND // _FRAC_UNIT)
    rows = checkpoint(rows.with_columns(fits.alias("_wide")))
    wide = _split_money_wide(
        rows.filter(nw.col("_wide")).drop("_wide"), money, line_key, tie_key, weight, total
    )
    narrow = rows.filter(~nw.col("_wide")).drop("_wide")
    if narrow.select(nw.len()).collect().item() == 0:
        return wide
    narrow = _split_money_limbs(narrow, money, line_key, tie_key, weight, total)
    return nw.concat([wide, narrow.select(wide.collect_schema().names())], how="vertical")


WIDE_BOUND = 10**38
"""Amount (in 1e-18 units) x a line's total weight stays below this in the one-step split: under
2**127 - 1 (about 1.7e38), so no 128-bit product overflows. A line with |whole| + 1 times its
total weight below 1e20 is within it (about 30 million dollars over a trillion weight units)."""


def _split_money_wide(
    rows: nw.LazyFrame, money: Sequence[str], line_key: str, tie_key: str, weight: str, total: str
) -> nw.LazyFrame:
    """:func:`_split_money` in 128-bit integers: each amount's magnitude in 1e-18 units times the
    row's weight, divided by the line's total (floor and remainder), then the largest-remainder
    step, then back to signed (whole, frac)."""
    pres = {m: f"_{m}_" for m in money}

    def magnitude(m: str, pre: str) -> list[nw.Expr]:
        whole, frac = nw.col(f"{m}_whole"), nw.col(f"{m}_frac")
        units = whole.cast(nw.Int128) * _FRAC_UNIT + frac.cast(nw.Int128)
        return [units.abs().alias(pre + "units"), _sign(m).alias(pre + "sign")]

    rows = rows.with_columns(*_each(money, pres, magnitude))

    def divide(m: str, pre: str) -> list[nw.Expr]:
        product = nw.col(pre + "units") * nw.col(weight).cast(nw.Int128)
        total_128 = nw.col(total).cast(nw.Int128)
        return [
            (product // total_128).alias(pre + "q"),
            (product % total_128).cast(nw.Int64).alias(pre + "carry"),
        ]

    rows = rows.with_columns(*_each(money, pres, divide))
    sums = rows.group_by(line_key).agg(
        *_each(money, pres, lambda m, pre: [nw.col(pre + "q").sum().alias(pre + "s")])
    )
    rows = rows.join(sums, on=line_key, how="left").with_columns(
        *_each(
            money,
            pres,
            lambda m, pre: [
                (nw.col(pre + "units") - nw.col(pre + "s")).cast(nw.Int64).alias(pre + "left")
            ],
        )
    )
    rows = _add_left_units(rows, money, pres, line_key, tie_key, "q")

    def signed(m: str, pre: str) -> list[nw.Expr]:
        q = nw.col(pre + "q")
        return [
            ((q // _FRAC_UNIT).cast(nw.Int64) * nw.col(pre + "sign")).alias(f"{m}_whole"),
            ((q % _FRAC_UNIT).cast(nw.Int64) * nw.col(pre + "sign")).alias(f"{m}_frac"),
        ]

    rows = rows.with_columns(*_each(money, pres, signed))
    return _drop_scratch(rows, pres)


def _add_left_units(
    rows: nw.LazyFrame,
    money: Sequence[str],
    pres: dict[str, str],
    line_key: str,
    tie_key: str,
    quotient: str,
) -> nw.LazyFrame:
    """The largest-remainder step, written once: per line and amount, the ``<pre>left`` units the
    floors left go one each to the rows with the largest remainders (``<pre>carry``), ties by
    ``tie_key`` ascending; ``<pre><quotient>`` is the column of 1e-18 units that receives them."""

    rows = rows.with_columns(
        *_each(money, pres, lambda m, pre: [(-nw.col(pre + "carry")).alias(pre + "neg_rem")])
    )
    rows = rows.with_columns(
        *_each(
            money,
            pres,
            lambda m, pre: [
                nw.col(pre + "neg_rem")
                .cum_count()
                .over(line_key, order_by=[pre + "neg_rem", tie_key])
                .alias(pre + "rank")
            ],
        )
    )
    return rows.with_columns(
        *_each(
            money,
            pres,
            lambda m, pre: [
                (
                    nw.col(pre + quotient)
                    + nw.when(nw.col(pre + "rank") <= nw.col(pre + "left")).then(1).otherwise(0)
                ).alias(pre + quotient)
            ],
        )
    )


def _split_money_limbs(
    rows: nw.LazyFrame, money: Sequence[str], line_key: str, tie_key: str, weight: str, total: str
) -> nw.LazyFrame:
    """:func:`_split_money` by long division on base-1000 limbs, in 64-bit integers only (any
    engine): no product overflows 64 bits and the only divisions are of an integer by a divisor
    of it with a small quotient. All amounts go through each step together, so the plan's depth
    does not grow with their number."""
    pres = {m: f"_{m}_" for m in money}

    rows = rows.with_columns(*_each(money, pres, lambda m, pre: [_sign(m).alias(pre + "sign")]))
    rows = rows.with_columns(
        *_each(
            money,
            pres,
            lambda m, pre: [
                *_limbs(nw.col(f"{m}_frac").abs(), FRACTION_LIMBS, pre + "l"),
                *[
                    expr.alias(f"{pre}l{i + FRACTION_LIMBS}")
                    for i, expr in enumerate(
                        _limbs(nw.col(f"{m}_whole").abs(), LIMBS - FRACTION_LIMBS, "_")
                    )
                ],
            ],
        )
    )
    # long division of amount x weight by the total, digit by digit from the top; the carry is the
    # remainder, so the last one is the row's remainder for the largest-remainder step
    for i in reversed(range(LIMBS)):

        def divide(m: str, pre: str, i: int = i) -> list[nw.Expr]:
            carry = nw.lit(0, nw.Int64) if i == LIMBS - 1 else nw.col(pre + "carry")
            step = carry * BASE + nw.col(f"{pre}l{i}") * nw.col(weight)
            remainder = step % nw.col(total)
            return [
                exact_div(step - remainder, nw.col(total)).alias(f"{pre}q{i}"),
                remainder.alias(pre + "carry"),
            ]

        rows = rows.with_columns(*_each(money, pres, divide))
        if i % DIGITS_PER_CUT == 0:
            rows = checkpoint(rows)
    # units left after the floors, per line: Horner over the limb differences (stays small)
    sums = rows.group_by(line_key).agg(
        *_each(
            money,
            pres,
            lambda m, pre: [
                nw.col(f"{pre}q{i}").sum().cast(nw.Int64).alias(f"{pre}s{i}") for i in range(LIMBS)
            ],
        )
    )
    rows = checkpoint(rows.join(sums, on=line_key, how="left"))

    def left_units(m: str, pre: str) -> list[nw.Expr]:
        left: nw.Expr = nw.lit(0, nw.Int64)
        for i in reversed(range(LIMBS)):
            left = left * BASE + (nw.col(f"{pre}l{i}") - nw.col(f"{pre}s{i}"))
        return [left.alias(pre + "left")]

    rows = rows.with_columns(*_each(money, pres, left_units))
    rows = _add_left_units(rows, money, pres, line_key, tie_key, "q0")
    rows = rows.with_columns(
        *_each(money, pres, lambda m, pre: [nw.col(f"{pre}q0").cast(nw.Int64)])
    )

    # back to (whole, frac): the fraction digits' sum stays below 2.002e18 and carries at most 2
    # whole units; each whole digit's term is at most the amount itself, so nothing overflows
    def whole_and_frac(m: str, pre: str) -> list[nw.Expr]:
        frac_units = sum(
            (nw.col(f"{pre}q{i}") * BASE**i for i in range(1, FRACTION_LIMBS)), nw.col(f"{pre}q0")
        )
        whole_units = sum(
            (
                nw.col(f"{pre}q{i}") * BASE ** (i - FRACTION_LIMBS)
                for i in range(FRACTION_LIMBS + 1, LIMBS)
            ),
            nw.col(f"{pre}q{FRACTION_LIMBS}"),
        )
        return [whole_units.alias(pre + "w"), frac_units.alias(pre + "f")]

    rows = rows.with_columns(*_each(money, pres, whole_and_frac))

    def signed(m: str, pre: str) -> list[nw.Expr]:
        frac = nw.col(pre + "f") % _FRAC_UNIT
        whole = nw.col(pre + "w") + exact_div(nw.col(pre + "f") - frac, _FRAC_UNIT)
        return [
            (whole * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{m}_whole"),
            (frac * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{m}_frac"),
        ]

    rows = rows.with_columns(*_each(money, pres, signed))
    return _drop_scratch(rows, pres)


def split_lines(
    lines: nw.LazyFrame,
    weights: nw.LazyFrame,
    *,
    line_key: str,
    tie_key: str,
    money: Sequence[str],
) -> nw.LazyFrame:
    """Split each line's amounts across its weight rows exactly (largest remainder, ties by
    tie_key).

    ``lines``: ``line_key`` and ``<m>_whole`` / ``<m>_frac`` for each name in ``money``.
    ``weights``: ``line_key``, ``tie_key``, other key columns, and ``weight`` (Int64, > 0; rows with
    a non-positive weight are dropped). Returns one row per weight row with its shares; a line
    without weight rows returns nothing (the callers route it to an unallocated or visible row).
    The result is computed here (:func:`checkpoint`), so splits can be stacked.
    """
    weights = weights.filter(nw.col("weight") > 0)
    totals = weights.group_by(line_key).agg(
        nw.col("weight").sum().cast(nw.Int64).alias("_total_weight")
    )
    check_weight_bound(weights, line_key)
    rows = weights.join(lines, on=line_key, how="inner").join(totals, on=line_key, how="inner")
    rows = _split_money(rows, money, line_key, tie_key, "weight", "_total_weight")
    return checkpoint(rows.drop("_total_weight"))


def check_weight_bound(weights: nw.LazyFrame, line_key: str) -> None:
    """Fail clearly when a line's total weight is beyond the exact long division's bound."""
    biggest = (
        weights.filter(nw.col("weight") > 0)
        .group_by(line_key)
        .agg(nw.col("weight").sum().alias("total"))
        .select(nw.col("total").max())
        .collect()
        .item()
    )
    if biggest is not None and int(biggest) > MAX_TOTAL_WEIGHT:
        raise WeightBoundError(
            f"a split's total weight {biggest} exceeds the exact split's bound {MAX_TOTAL_WEIGHT}"
        )


class WeightBoundError(ValueError):
    """A split beyond the exact long division's bound (:data:`MAX_TOTAL_WEIGHT`): the build fails
    with the model's name (:func:`gpucost.engines.lazy_io.allocate`) rather than lose a unit."""


def repr_key(*columns: str) -> nw.Expr:
    """The row core's tie-break: ``repr`` of the key tuple (text keys without quotes or
    backslashes; a null is ``None``, unquoted, as ``repr`` writes it)."""
    parts: list[Any] = [nw.lit("(")]
    for i, column in enumerate(columns):
        value = nw.col(column).cast(nw.String)
        parts.append(
            nw.when(value.is_null())
            .then(nw.lit("None"))
            .otherwise(nw.concat_str([nw.lit("'"), value, nw.lit("'")]))
        )
        parts.append(nw.lit(", " if i + 1 < len(columns) else ("," if len(columns) == 1 else "")))
    parts.append(nw.lit(")"))
    return nw.concat_str(parts)


def ratio_one(frame: nw.LazyFrame) -> nw.LazyFrame:
    """``frame`` with an ``allocation_ratio`` of 1 (the whole line)."""
    return frame.with_columns(
        nw.lit(1, nw.Int64).alias("allocation_ratio_whole"),
        nw.lit(0, nw.Int64).alias("allocation_ratio_frac"),
    )


MONEY = ("billed_cost", "effective_cost", "allocation_ratio")
MONEY_COLUMNS = tuple(f"{m}_{p}" for m in MONEY for p in MONEY_PARTS)
"""The whole / frac column pairs of the three amounts, as every core reads and returns them."""


def checkpoint(frame: nw.LazyFrame) -> nw.LazyFrame:
    """``frame`` computed once, its plan cut: the next stage starts from its rows.

    Each long division is a few dozen projection layers. Engines bind and optimise a plan as a
    whole, so stacked splits cost more than their sum (a prorate with four splits planned 13 s
    and ran 18 s on three rows in DuckDB; 1.1 s per split alone). Between stages the plan is
    therefore cut: a Polars LazyFrame is collected (its rows become the next plan's input), a DuckDB
    relation materialised (``materialize``: executed once, rows held by the connection), a PySpark
    DataFrame locally checkpointed (``localCheckpoint``: cached on the executors, lineage
    truncated). Other backends pass through unchanged.
    """
    native = frame.to_native()
    if type(native).__module__.startswith("polars"):  # polars.LazyFrame
        return nw.from_native(native.collect().lazy())
    if hasattr(native, "materialize"):  # duckdb.DuckDBPyRelation
        return nw.from_native(native.materialize())
    if hasattr(native, "localCheckpoint"):  # pyspark.sql.DataFrame
        return nw.from_native(native.localCheckpoint())
    return frame


def first_row(frame: nw.LazyFrame, *columns: str) -> tuple[Any, ...] | None:
    """One row's ``columns`` (None when the frame is empty): for error messages and checks."""
    rows = frame.select(*columns).head(1).collect().rows()
    return rows[0] if rows else None


def optional_column(frame: nw.LazyFrame, column: str, default: Any, dtype: Any) -> nw.Expr:
    """``column`` with nulls as ``default``, or ``default`` when the frame has no such column."""
    if column in frame.collect_schema().names():
        return nw.col(column).cast(dtype).fill_null(nw.lit(default, dtype))
    return nw.lit(default, dtype)


WEIGHT_SCALE = 6
"""Share weights that are amounts (an owner's placed cost, a declared weight) count in whole
micro-units: times 1e6, truncated toward zero."""

_FRAC_PER_WEIGHT_UNIT = 10 ** (MONEY_SCALE - WEIGHT_SCALE)


def weight_units(prefix: str = "weight") -> nw.Expr:
    """A money-typed weight (``<prefix>_whole`` / ``_frac``) in whole micro-units, truncated toward
    zero; a negative or null weight is 0 (ignored like a non-positive one). A whole part beyond
    the split bound is capped just past it, so the split fails clearly instead of overflowing."""
    whole = nw.col(f"{prefix}_whole")
    frac = nw.col(f"{prefix}_frac")
    cap = MAX_TOTAL_WEIGHT // 10**WEIGHT_SCALE + 1
    capped = nw.max_horizontal(nw.min_horizontal(whole, nw.lit(cap, nw.Int64)), nw.lit(0, nw.Int64))
    micro = capped * 10**WEIGHT_SCALE + exact_div(
        frac - frac % _FRAC_PER_WEIGHT_UNIT, _FRAC_PER_WEIGHT_UNIT
    )
    return (
        nw.when(whole.is_null() | frac.is_null() | (whole < 0) | (frac < 0))
        .then(nw.lit(0, nw.Int64))
        .otherwise(micro)
        .cast(nw.Int64)
    )


def narrowest_scope(scopes: nw.LazyFrame, active_scopes: nw.LazyFrame) -> nw.LazyFrame:
    """Per ``charge_id``, its narrowest scope (lowest ``scope_rank``) among ``active_scopes``."""
    return (
        scopes.join(active_scopes, on="scope_key", how="inner")
        .group_by("charge_id")
        .agg(nw.col("scope_rank").min())
        .join(scopes, on=["charge_id", "scope_rank"], how="inner")
        .select("charge_id", "scope_key")
    )
