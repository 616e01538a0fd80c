"""The allocation core written once for lazy engines (narwhals): DuckDB relations, PySpark
DataFrames.

The same functions as :mod:`gpucost.core.allocation` (GPU-hour proration of node lines, idle
spreading)
and :mod:`gpucost.core.storage` (volume lines by claim-holding time), as lazy narwhals plans, so
they run
where the data is: on a DuckDB relation on one machine, on a PySpark DataFrame on a cluster
(dbt-databricks Python models), never collected into Python rows.

Money is exact and never float. An amount enters and leaves as two ``Int64`` columns,
``<name>_whole`` (the amount truncated toward zero) and ``<name>_frac`` (the rest in 1e-18 units,
same sign), i.e. the ``DECIMAL(38, 18)`` value ``whole + frac * 1e-18``; :func:`money_columns` and
:func:`money_value` convert at the boundary. Splitting is :func:`gpucost.core.money.split_exact`
(largest
remainder in 1e-18 units, ties by key) done by long division on base-1000 limbs, so no product
overflows 64 bits, and the only divisions are of an integer by a divisor of it (the remainder is
taken first, in integers) with a quotient below 2,000: engines that divide in double precision
(DuckDB's and Spark's ``/``) are off by a relative 4e-16 at most, far less than the 0.5 the rounding
to an integer forgives. This bounds a split's total weight (:data:`MAX_TOTAL_WEIGHT`, 4.6e15: about
53 million GPU-days in milliseconds) and an amount's magnitude (9.2e18).

Invariant (as in gpucost.core.allocation, tested on both engines against it): for every input line
or
idle row the returned rows' amounts and ratios sum exactly to the input's, and equal the row core's.
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


def _exact_div(expr: nw.Expr, divisor: nw.Expr | int) -> nw.Expr:
    """``expr // divisor`` for non-negative integers when ``expr`` is a multiple of ``divisor`` and
    the quotient is small (below 2**40 here): true division in double precision is then within
    1e-3 of the integer quotient, which the rounding recovers exactly."""
    return (expr / divisor).round(0).cast(nw.Int64)


def _limb(value: nw.Expr, i: int) -> nw.Expr:
    """Base-1000 digit ``i`` of a non-negative Int64 (digit 6 holds everything from 1e18 up)."""
    high = value % (BASE ** (i + 1)) if i + 1 < 7 else value
    low = value % (BASE**i) if i else nw.lit(0, nw.Int64)
    return _exact_div(high - low, BASE**i)


def _limbs(value: nw.Expr, count: int, prefix: str) -> list[nw.Expr]:
    """Base-1000 digits of a non-negative Int64 (least significant first)."""
    return [_limb(value, i).alias(f"{prefix}{i}") for i in range(count)]


def _split_money(
    rows: nw.LazyFrame, money: Sequence[str], line_key: str, tie_key: str, weight: str, total: str
) -> nw.LazyFrame:
    """Replace ``<m>_whole`` / ``<m>_frac`` (each line's amount, on each of its weight rows) by the
    row's exact share, for every name in ``money``.

    ``rows``: one row per (line, key) with ``weight`` (> 0) and ``total`` (the line's weight total).
    Largest remainder per line and amount, ties by ``tie_key`` ascending. All amounts go through
    each step together, so the plan's depth does not grow with their number.
    """
    pres = {m: f"_{m}_" for m in money}

    def each(make) -> list[nw.Expr]:
        return [expr for m in money for expr in make(m, pres[m])]

    rows = rows.with_columns(
        *each(
            lambda m, pre: [
                nw.when((nw.col(f"{m}_whole") < 0) | (nw.col(f"{m}_frac") < 0))
                .then(nw.lit(-1))
                .otherwise(nw.lit(1))
                .cast(nw.Int64)
                .alias(pre + "sign")
            ]
        )
    )
    rows = rows.with_columns(
        *each(
            lambda m, pre: [
                *_limbs(nw.col(f"{m}_frac").abs(), FRACTION_LIMBS, pre + "l"),
                *[
                    expr.alias(f"{pre}l{i + FRACTION_LIMBS}")
                    for i, expr in enumerate(
                        _limbs(nw.col(f"{m}_whole").abs(), LIMBS - FRACTION_LIMBS, "_")
                    )
                ],
            ]
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
                _exact_div(step - remainder, nw.col(total)).alias(f"{pre}q{i}"),
                remainder.alias(pre + "carry"),
            ]

        rows = rows.with_columns(*each(divide))
    # units left after the floors, per line: Horner over the limb differences (stays small)
    sums = rows.group_by(line_key).agg(
        *each(
            lambda m, pre: [
                nw.col(f"{pre}q{i}").sum().cast(nw.Int64).alias(f"{pre}s{i}") for i in range(LIMBS)
            ]
        )
    )
    rows = rows.join(sums, on=line_key, how="left")

    def left_units(m: str, pre: str) -> list[nw.Expr]:
        left: nw.Expr = nw.lit(0, nw.Int64)
        for i in reversed(range(LIMBS)):
            left = left * BASE + (nw.col(f"{pre}l{i}") - nw.col(f"{pre}s{i}"))
        return [left.alias(pre + "left")]

    rows = rows.with_columns(*each(left_units))
    rows = rows.with_columns(
        *each(lambda m, pre: [(-nw.col(pre + "carry")).alias(pre + "neg_rem")])
    )
    rows = rows.with_columns(
        *each(
            lambda m, pre: [
                nw.col(pre + "neg_rem")
                .cum_count()
                .over(line_key, order_by=[pre + "neg_rem", tie_key])
                .alias(pre + "rank")
            ]
        )
    )
    rows = rows.with_columns(
        *each(
            lambda m, pre: [
                (
                    nw.col(f"{pre}q0")
                    + nw.when(nw.col(pre + "rank") <= nw.col(pre + "left")).then(1).otherwise(0)
                )
                .cast(nw.Int64)
                .alias(f"{pre}q0")
            ]
        )
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

    rows = rows.with_columns(*each(whole_and_frac))

    def signed(m: str, pre: str) -> list[nw.Expr]:
        frac = nw.col(pre + "f") % _FRAC_UNIT
        whole = nw.col(pre + "w") + _exact_div(nw.col(pre + "f") - frac, _FRAC_UNIT)
        return [
            (whole * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{m}_whole"),
            (frac * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{m}_frac"),
        ]

    rows = rows.with_columns(*each(signed))
    scratch = tuple(pres.values())
    return rows.drop([c for c in rows.collect_schema().names() if c.startswith(scratch)])


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
            f"a split's total weight {biggest} exceeds {MAX_TOTAL_WEIGHT}; "
            "use gpucost.core.allocation"
        )


class WeightBoundError(ValueError):
    """A split's total weight is beyond :data:`MAX_TOTAL_WEIGHT`: the row core
    (:mod:`gpucost.core.allocation`, exact at any size) must do it."""


def _tie(*columns: str) -> nw.Expr:
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


def _ratio_one(frame: nw.LazyFrame) -> nw.LazyFrame:
    return frame.with_columns(
        nw.lit(1, nw.Int64).alias("allocation_ratio_whole"),
        nw.lit(0, nw.Int64).alias("allocation_ratio_frac"),
    )


MONEY = ("billed_cost", "effective_cost", "allocation_ratio")
MONEY_COLUMNS = tuple(f"{m}_{p}" for m in MONEY for p in MONEY_PARTS)
"""The whole / frac column pairs of the three amounts, as every core reads and returns them."""


BASES = ("requested", "used", "max")
IDLE_POLICIES = ("proportional", "even", "platform", "visible")
COMPLEXITY_UNIT = 1_000_000
"""A task-complexity weight of 1, in the millionths the cores count complexity in."""


def checkpoint(frame: nw.LazyFrame) -> nw.LazyFrame:
    """``frame`` computed once, its plan cut: the next stage starts from its rows.

    Each long division is a few dozen projection layers. Engines bind and optimise a plan as a
    whole, so stacked splits cost more than their sum (a prorate with four splits planned 13 s
    and ran 18 s on three rows in DuckDB; 1.1 s per split alone). Between stages the plan is
    therefore cut: a DuckDB relation is materialised (``materialize``: executed once, rows held by
    the connection), a PySpark DataFrame locally checkpointed (``localCheckpoint``: cached on the
    executors, lineage truncated). Other backends pass through unchanged.
    """
    native = frame.to_native()
    if hasattr(native, "materialize"):  # duckdb.DuckDBPyRelation
        return nw.from_native(native.materialize())
    if hasattr(native, "localCheckpoint"):  # pyspark.sql.DataFrame
        return nw.from_native(native.localCheckpoint())
    return frame


def _first(frame: nw.LazyFrame, *columns: str) -> tuple[Any, ...] | None:
    """One row's ``columns`` (None when the frame is empty): for error messages and checks."""
    rows = frame.select(*columns).head(1).collect().rows()
    return rows[0] if rows else None


def _optional(frame: nw.LazyFrame, column: str, default: Any, dtype: Any) -> nw.Expr:
    """``column`` with nulls as ``default``, or ``default`` when the frame has no such column."""
    if column in frame.collect_schema().names():
        return nw.col(column).cast(dtype).fill_null(nw.lit(default, dtype))
    return nw.lit(default, dtype)


def prorate_node_lines(
    lines: nw.LazyFrame, usages: nw.LazyFrame, basis: str = "requested", *, utilised: bool = True
) -> nw.LazyFrame:
    """Lazy :func:`gpucost.core.allocation.prorate_node_lines`.

    ``lines``: ``charge_id``, ``billed_cost_whole`` / ``_frac``, ``effective_cost_whole`` /
    ``_frac``, ``capacity_gpu_ms``, and optionally ``allocation_ratio_whole`` / ``_frac`` (the
    share of the bill line these amounts are; default 1), ``gpu_allocation_basis`` (the line's
    pool basis; null: ``basis``) and ``complexity_weighting`` (null: false). ``usages``:
    ``charge_id``, ``workload_id``, ``requested_gpu_ms``, ``used_gpu_ms``, and optionally
    ``complexity_units`` (the task-complexity weight in millionths, > 0; null: 1,000,000).
    Returns ``charge_id``, ``workload_id`` (null for idle / unallocated), ``allocation_kind``,
    ``unallocated_reason``, ``allocation_basis``, ``basis_gpu_ms``, ``used_gpu_ms``, the three
    amounts and ``utilised_cost`` as whole / frac pairs (not with ``utilised=False``, which saves
    its split where nobody reads it). Each line's rows sum to it exactly and
    equal the row core's (which takes a workload's last complexity on a line where it has several
    usage rows with different ones; this takes the largest: the warehouse has one per line).
    """
    if basis not in BASES:
        raise ValueError(f"unknown allocation basis {basis!r}; expected one of {BASES}")
    if "allocation_ratio_whole" not in lines.collect_schema().names():
        lines = _ratio_one(lines)
    lines = lines.with_columns(
        _optional(lines, "gpu_allocation_basis", basis, nw.String).alias("_basis"),
        _optional(lines, "complexity_weighting", False, nw.Boolean).alias("_weighting"),
    )
    unknown = _first(lines.filter(~nw.col("_basis").is_in(BASES)), "_basis", "charge_id")
    if unknown is not None:
        raise ValueError(
            f"unknown allocation basis {unknown[0]!r} on line {unknown[1]}; expected one of {BASES}"
        )
    requested = nw.col("requested_gpu_ms").fill_null(0).cast(nw.Int64)
    used = nw.col("used_gpu_ms").fill_null(0).cast(nw.Int64)
    weight = (
        nw.when(nw.col("_basis") == "requested")
        .then(requested)
        .when(nw.col("_basis") == "used")
        .then(used)
        .otherwise(nw.max_horizontal(requested, used))
    )
    taking = usages.join(lines.select("charge_id", "_basis"), on="charge_id", how="inner")
    taking = taking.with_columns(
        weight.cast(nw.Int64).alias("_w"),
        used.alias("_used"),
        _optional(usages, "complexity_units", COMPLEXITY_UNIT, nw.Int64).alias("_cx"),
    ).filter(nw.col("_w") > 0)
    bad = _first(taking.filter(nw.col("_cx") <= 0), "_cx")
    if bad is not None:
        raise ValueError(f"complexity weight must be positive, got {bad[0] / COMPLEXITY_UNIT}")
    workloads = (
        taking.group_by("charge_id", "workload_id")
        .agg(
            nw.col("_w").sum().cast(nw.Int64).alias("weight"),
            nw.col("_used").sum().cast(nw.Int64).alias("used_gpu_ms"),
            nw.col("_cx").max().cast(nw.Int64).alias("_cx"),
        )
        .with_columns(nw.col("workload_id").cast(nw.String), _tie("workload_id").alias("_tie"))
    )
    taken = workloads.group_by("charge_id").agg(
        nw.col("weight").sum().cast(nw.Int64).alias("_taken")
    )
    capacity = nw.col("capacity_gpu_ms").fill_null(0).cast(nw.Int64)
    lines = (
        lines.join(taken, on="charge_id", how="left")
        .with_columns(nw.col("_taken").fill_null(0).cast(nw.Int64))
        .with_columns(
            nw.max_horizontal(capacity - nw.col("_taken"), nw.lit(0)).cast(nw.Int64).alias("_idle"),
            nw.when(nw.col("_weighting"))
            .then(nw.concat_str([nw.col("_basis"), nw.lit("*complexity")]))
            .otherwise(nw.col("_basis"))
            .alias("_recorded"),
        )
    )
    by_complexity = nw.col("_weighting") & (nw.col("_taken") > 0)
    money = lines.select("charge_id", *MONEY_COLUMNS)
    idle = lines.filter(nw.col("_idle") > 0).select(
        "charge_id",
        nw.lit(None, nw.String).alias("workload_id"),
        nw.col("_idle").alias("weight"),
        nw.lit(0, nw.Int64).alias("used_gpu_ms"),
        nw.lit("('~idle',)").alias("_tie"),
    )
    shape = idle.collect_schema().names()
    # by GPU time: the workloads and the idle share the line
    plain = split_lines(
        money.join(lines.filter(~by_complexity).select("charge_id"), on="charge_id", how="inner"),
        nw.concat([workloads.select(shape), idle], how="vertical"),
        line_key="charge_id",
        tie_key="_tie",
        money=MONEY,
    ).with_columns(nw.col("weight").alias("basis_gpu_ms"))
    columns = ["charge_id", "workload_id", "basis_gpu_ms", "used_gpu_ms", *MONEY_COLUMNS]
    stages = [plain.select(columns)]
    weighted_lines = lines.filter(by_complexity)
    if _first(weighted_lines, "charge_id") is not None:
        stages += _split_by_complexity(money, weighted_lines, workloads, columns)
    shares = nw.concat(stages, how="vertical").with_columns(
        nw.col("basis_gpu_ms").cast(nw.Int64), nw.col("used_gpu_ms").cast(nw.Int64)
    )
    extra = UTILISED_COLUMNS if utilised else ()
    if utilised:
        shares = _with_utilised_cost(shares)
    shares = shares.join(lines.select("charge_id", "_recorded"), on="charge_id", how="inner")
    split = shares.select(
        "charge_id",
        "workload_id",
        nw.when(nw.col("workload_id").is_null())
        .then(nw.lit("idle"))
        .otherwise(nw.lit("usage"))
        .alias("allocation_kind"),
        nw.lit(None, nw.String).alias("unallocated_reason"),
        nw.col("_recorded").alias("allocation_basis"),
        "basis_gpu_ms",
        "used_gpu_ms",
        *MONEY_COLUMNS,
        *extra,
    )
    unallocated = lines.filter((nw.col("_taken") + nw.col("_idle")) == 0).select(
        "charge_id",
        nw.lit(None, nw.String).alias("workload_id"),
        nw.lit("unallocated").alias("allocation_kind"),
        nw.lit("no_gpu_telemetry").alias("unallocated_reason"),
        nw.col("_recorded").alias("allocation_basis"),
        nw.lit(0, nw.Int64).alias("basis_gpu_ms"),
        nw.lit(0, nw.Int64).alias("used_gpu_ms"),
        *MONEY_COLUMNS,
        *(nw.lit(0, nw.Int64).alias(c) for c in extra),
    )
    return nw.concat([split, unallocated], how="vertical")


def _split_by_complexity(
    money: nw.LazyFrame, weighted_lines: nw.LazyFrame, workloads: nw.LazyFrame, columns: list[str]
) -> list[nw.LazyFrame]:
    """The shares of lines whose pool weights workloads by task complexity: the idle is sized by
    GPU time, the workloads' part (``work``) shared by GPU time x complexity."""
    halves = split_lines(
        money.join(weighted_lines.select("charge_id"), on="charge_id", how="inner"),
        nw.concat(
            [
                weighted_lines.select(
                    "charge_id", nw.lit("work").alias("_half"), nw.col("_taken").alias("weight")
                ),
                weighted_lines.select(
                    "charge_id", nw.lit("idle").alias("_half"), nw.col("_idle").alias("weight")
                ),
            ],
            how="vertical",
        ).with_columns(nw.concat_str([nw.lit("'"), nw.col("_half"), nw.lit("'")]).alias("_tie")),
        line_key="charge_id",
        tie_key="_tie",
        money=MONEY,
    )
    work = split_lines(
        halves.filter(nw.col("_half") == "work").select("charge_id", *MONEY_COLUMNS),
        workloads.select(
            "charge_id",
            "workload_id",
            (nw.col("weight") * nw.col("_cx")).alias("weight"),
            nw.col("weight").alias("basis_gpu_ms"),
            "used_gpu_ms",
            "_tie",
        ),
        line_key="charge_id",
        tie_key="_tie",
        money=MONEY,
    )
    weighted_idle = halves.filter(nw.col("_half") == "idle").select(
        "charge_id",
        nw.lit(None, nw.String).alias("workload_id"),
        nw.col("weight").alias("basis_gpu_ms"),
        nw.lit(0, nw.Int64).alias("used_gpu_ms"),
        *MONEY_COLUMNS,
    )
    return [work.select(columns), weighted_idle.select(columns)]


UTILISED_COLUMNS = ("utilised_cost_whole", "utilised_cost_frac")


def _with_utilised_cost(shares: nw.LazyFrame) -> nw.LazyFrame:
    """Add :func:`gpucost.core.allocation.utilised_share` of each usage row's billed cost (the part
    its
    busy GPU time covers: ``cost x min(used, basis) / basis``, split exactly); zero on idle rows."""
    busy = nw.min_horizontal(
        nw.max_horizontal(nw.col("used_gpu_ms"), nw.lit(0)), nw.col("basis_gpu_ms")
    ).cast(nw.Int64)
    shares = shares.with_columns(
        nw.concat_str([nw.col("charge_id"), nw.col("workload_id")], separator="\x1f").alias("_row"),
        busy.alias("_busy"),
    )
    usage = shares.filter(~nw.col("workload_id").is_null() & (nw.col("basis_gpu_ms") > 0))
    parts = nw.concat(
        [
            usage.select("_row", nw.col("_busy").alias("weight"), nw.lit("'busy'").alias("_tie")),
            usage.select(
                "_row",
                (nw.col("basis_gpu_ms") - nw.col("_busy")).alias("weight"),
                nw.lit("'waste'").alias("_tie"),
            ),
        ],
        how="vertical",
    )
    utilised = (
        split_lines(
            usage.select("_row", "billed_cost_whole", "billed_cost_frac"),
            parts,
            line_key="_row",
            tie_key="_tie",
            money=("billed_cost",),
        )
        .filter(nw.col("_tie") == "'busy'")
        .select(
            "_row",
            nw.col("billed_cost_whole").alias(UTILISED_COLUMNS[0]),
            nw.col("billed_cost_frac").alias(UTILISED_COLUMNS[1]),
        )
    )
    return (
        shares.join(utilised, on="_row", how="left")
        .with_columns(*(nw.col(c).fill_null(0).cast(nw.Int64) for c in UTILISED_COLUMNS))
        .drop("_row", "_busy")
    )


def spread_idle(
    idle_rows: nw.LazyFrame,
    idle_scopes: nw.LazyFrame,
    weights: nw.LazyFrame,
    policy: str = "proportional",
) -> nw.LazyFrame:
    """Lazy :func:`gpucost.core.allocation.spread_idle` (every policy: ``proportional``, ``even``,
    ``platform``, ``visible``).

    ``idle_rows``: ``charge_id`` and the three amounts as whole / frac pairs (``allocation_ratio``
    is the idle row's share of its line). ``idle_scopes``: ``charge_id``, ``scope_rank`` (1 =
    narrowest), ``scope_key`` (the row core's ``scope_keys`` list, one row each). ``weights``:
    ``scope_key``, ``workload_id``, ``recipient_group`` (set where ``workload_id`` is null: a group
    of workloads paid as one row, ``recipient`` = ``owner``), ``owner_key``, ``weight``. Each idle
    row goes to its first scope with a positive weight, in proportion (``even``: each owner of the
    scope the same, then by weight between the owner's recipients); with none it stays visible
    (``recipient`` = ``unowned``) with the reason ``no_active_workload_in_scope``. Returns
    ``charge_id``, ``workload_id``, ``recipient_group``, ``recipient``, ``scope_key``,
    ``idle_policy``, ``idle_reason`` and the amounts; rows sum exactly to each idle row.
    """
    if policy not in IDLE_POLICIES:
        raise ValueError(f"unknown idle policy {policy!r}; expected one of {IDLE_POLICIES}")
    kept = idle_rows.select("charge_id", *MONEY_COLUMNS)

    def whole_rows(frame: nw.LazyFrame, recipient: str, reason: str | None) -> nw.LazyFrame:
        return frame.select(
            "charge_id",
            nw.lit(None, nw.String).alias("workload_id"),
            nw.lit(None, nw.String).alias("recipient_group"),
            nw.lit(recipient).alias("recipient"),
            nw.lit(None, nw.String).alias("scope_key"),
            nw.lit(policy).alias("idle_policy"),
            nw.lit(reason, nw.String).alias("idle_reason"),
            *MONEY_COLUMNS,
        )

    if policy in ("platform", "visible"):
        return whole_rows(kept, "platform" if policy == "platform" else "unowned", None)
    active = (
        weights.with_columns(
            nw.col("weight").cast(nw.Int64),
            nw.col("workload_id").cast(nw.String),
            nw.col("recipient_group").cast(nw.String),
        )
        .filter(nw.col("weight") > 0)
        .group_by("scope_key", "owner_key", "workload_id", "recipient_group")
        .agg(nw.col("weight").sum().cast(nw.Int64))
        .with_columns(
            nw.coalesce(nw.col("workload_id"), nw.col("recipient_group")).alias("_recipient")
        )
    )
    active_scopes = active.select("scope_key").unique()
    chosen = (
        idle_scopes.join(active_scopes, on="scope_key", how="inner")
        .group_by("charge_id")
        .agg(nw.col("scope_rank").min())
        .join(idle_scopes, on=["charge_id", "scope_rank"], how="inner")
        .select("charge_id", "scope_key")
    )
    idle_weights = chosen.join(active, on="scope_key", how="inner").with_columns(
        _tie("owner_key", "_recipient").alias("_tie")
    )
    if policy == "even":
        spread = _split_even_by_owner(kept, idle_weights)
    else:
        spread = split_lines(kept, idle_weights, line_key="charge_id", tie_key="_tie", money=MONEY)
    spread = spread.select(
        "charge_id",
        "workload_id",
        nw.when(nw.col("workload_id").is_null())
        .then(nw.col("recipient_group"))
        .otherwise(nw.lit(None, nw.String))
        .alias("recipient_group"),
        nw.when(nw.col("workload_id").is_null())
        .then(nw.lit("owner"))
        .otherwise(nw.lit("workload"))
        .alias("recipient"),
        "scope_key",
        nw.lit(policy).alias("idle_policy"),
        nw.lit(None, nw.String).alias("idle_reason"),
        *MONEY_COLUMNS,
    )
    stranded = kept.join(chosen, on="charge_id", how="anti")
    return nw.concat(
        [spread, whole_rows(stranded, "unowned", "no_active_workload_in_scope")], how="vertical"
    )


def _split_even_by_owner(kept: nw.LazyFrame, idle_weights: nw.LazyFrame) -> nw.LazyFrame:
    """The ``even`` idle policy: each idle row split equally between the owners active in its
    scope (ties by owner key), then each owner's part by weight between its recipients."""
    owners = idle_weights.select("charge_id", "owner_key").unique()
    halves = split_lines(
        kept,
        owners.with_columns(
            nw.lit(1, nw.Int64).alias("weight"),
            nw.concat_str([nw.lit("'"), nw.col("owner_key"), nw.lit("'")]).alias("_owner_tie"),
        ),
        line_key="charge_id",
        tie_key="_owner_tie",
        money=MONEY,
    )
    owner_line = nw.concat_str([nw.col("charge_id"), nw.col("owner_key")], separator="\x1f")
    return split_lines(
        halves.select(owner_line.alias("_owner_line"), *MONEY_COLUMNS),
        idle_weights.with_columns(owner_line.alias("_owner_line")),
        line_key="_owner_line",
        tie_key="_tie",
        money=MONEY,
    )


VOLUME_CLAIM_BASIS = "volume_claim"


def _text(column: str) -> nw.Expr:
    """A text column, null when empty (the row core's truthiness)."""
    return nw.when(nw.col(column).fill_null("") != "").then(nw.col(column).cast(nw.String))


def allocate_volume_lines(lines: nw.LazyFrame, mounts: nw.LazyFrame) -> nw.LazyFrame:
    """Lazy :func:`gpucost.core.storage.allocate_volume_lines`: each volume line split over the
    pods that
    held its claim, by claim-holding milliseconds; a line nobody held stays whole (unallocated).

    ``lines``: ``charge_id``, ``billed_cost_whole`` / ``_frac``, ``effective_cost_whole`` /
    ``_frac``, ``claim_ids``, ``persistent_volume_ids``, ``volume_key`` (text, may be null).
    ``mounts``: ``charge_id``, ``workload_id``, ``mounted_ms``. Returns ``charge_id``,
    ``workload_id``, ``allocation_kind``, ``unallocated_reason``, ``allocation_basis``,
    ``mounted_ms`` and the three amounts as whole / frac pairs; each line's rows sum to it exactly
    (ratio 1), ties by workload id as in the row core.
    """
    negative = mounts.filter(nw.col("mounted_ms") < 0).select(nw.len()).collect().item()
    if negative:
        raise ValueError(f"{negative} mount rows with a negative mounted_ms")
    held = (
        mounts.filter(~nw.col("workload_id").is_null())
        .with_columns(nw.col("mounted_ms").fill_null(0).cast(nw.Int64))
        .filter(nw.col("mounted_ms") > 0)
        .group_by("charge_id", "workload_id")
        .agg(nw.col("mounted_ms").sum().cast(nw.Int64).alias("weight"))
        .with_columns(
            nw.col("workload_id").cast(nw.String),
            # repr of the workload id, the row core's tie-break (ids without quotes or backslashes)
            nw.concat_str([nw.lit("'"), nw.col("workload_id"), nw.lit("'")]).alias("_tie"),
        )
    )
    kept = _ratio_one(lines)
    split = split_lines(
        kept.select("charge_id", *MONEY_COLUMNS),
        held,
        line_key="charge_id",
        tie_key="_tie",
        money=MONEY,
    ).select(
        "charge_id",
        "workload_id",
        nw.lit("usage").alias("allocation_kind"),
        nw.lit(None, nw.String).alias("unallocated_reason"),
        nw.lit(VOLUME_CLAIM_BASIS).alias("allocation_basis"),
        nw.col("weight").cast(nw.Int64).alias("mounted_ms"),
        *MONEY_COLUMNS,
    )
    reason = (
        nw.when(~_text("claim_ids").is_null())
        .then(nw.concat_str([nw.lit("volume_without_pod: "), _text("claim_ids")]))
        .otherwise(
            nw.concat_str(
                [
                    nw.lit("volume_without_claim: "),
                    nw.coalesce(_text("persistent_volume_ids"), _text("volume_key"), nw.lit("?")),
                ]
            )
        )
    )
    unheld = kept.join(held.select("charge_id").unique(), on="charge_id", how="anti").select(
        "charge_id",
        nw.lit(None, nw.String).alias("workload_id"),
        nw.lit("unallocated").alias("allocation_kind"),
        reason.alias("unallocated_reason"),
        nw.lit(VOLUME_CLAIM_BASIS).alias("allocation_basis"),
        nw.lit(0, nw.Int64).alias("mounted_ms"),
        *MONEY_COLUMNS,
    )
    return nw.concat([split, unheld], how="vertical")
