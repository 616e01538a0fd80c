"""Reservations, shared lines and shared workloads on lazy engines (narwhals): DuckDB relations,
PySpark DataFrames.

The lazy versions of :func:`gpucost.core.allocation.claim_reserved_idle`,
:func:`gpucost.core.allocation.spread_shared` and
:func:`gpucost.core.allocation.split_shared_workloads`,
built on the exact split of :mod:`gpucost.core.lazy_allocation` (money as ``<name>_whole`` /
``<name>_frac`` Int64 pairs, largest remainder in 1e-18 units, ties by the row core's key order).
Each returns the row core's rows with the same exact amounts.

A list-valued input of the row core (``scope_keys``: scopes from narrow to wide) is a long frame
here: one row per (``charge_id``, ``scope_rank``, ``scope_key``), rank 1 the narrowest, as
:func:`gpucost.core.lazy_allocation.spread_idle` reads it.

Share weights (an owner's placed cost, a declared weight, a read count) are money-typed here too
(``weight_whole`` / ``weight_frac``) and count, as in the row core, in whole micro-units
(:func:`gpucost.core.allocation.weight_units`: times 1e6, truncated toward zero); a split's total is
bounded by :data:`gpucost.core.lazy_allocation.MAX_TOTAL_WEIGHT` micro-units, beyond which it fails
clearly.
"""

from __future__ import annotations

import narwhals as nw

from gpucost.core import lazy_allocation
from gpucost.core.allocation import WEIGHT_SCALE
from gpucost.core.lazy_allocation import (
    BASE,
    FRACTION_LIMBS,
    LIMBS,
    MONEY,
    MONEY_COLUMNS,
    WeightBoundError,
    _exact_div,
    _limb,
    _ratio_one,
    _tie,
    split_lines,
)
from gpucost.core.money import MONEY_SCALE

_NO_SCOPE = "\x00no scope"
"""Join key standing for a null reservation scope (the row core keys its dicts by ``None``)."""

_FRAC_PER_WEIGHT_UNIT = 10 ** (MONEY_SCALE - WEIGHT_SCALE)
_FRAC_UNIT = 10**MONEY_SCALE

MAX_SCOPE_IDLE_MS = lazy_allocation.MAX_TOTAL_WEIGHT
"""The largest idle time (ms) a reservation scope may have: the claimed part of an idle row is
computed row by row (:func:`_scaled_half_up`), a long division whose every step ``carry x 1000 +
digit x claimed`` stays below ``2,000 x`` the scope's idle, inside int64 up to this bound (the same
as a split's, about 53 million GPU-days in one cluster and line period)."""

RESERVED_COLUMNS = (
    "charge_id",
    "workload_id",
    "recipient",
    "idle_policy",
    "reservation_id",
    "team_id",
    "project_id",
    "scope_key",
    "idle_reason",
    *MONEY_COLUMNS,
)
"""The columns of :func:`claim_reserved_idle`'s reserved rows."""

IDLE_SPREAD_COLUMNS = (
    "charge_id",
    "workload_id",
    "recipient_group",
    "recipient",
    "reservation_id",
    "team_id",
    "project_id",
    "scope_key",
    "idle_policy",
    "idle_reason",
    *MONEY_COLUMNS,
)
"""The columns of :func:`spread_idle_with_reservations` (arrow_io.IDLE_SPREAD_SCHEMA's)."""


def weight_units(prefix: str = "weight") -> nw.Expr:
    """A money-typed weight (``<prefix>_whole`` / ``_frac``) in whole micro-units, truncated toward
    zero, as :func:`gpucost.core.allocation.weight_units`; a negative or null weight is 0 (ignored
    like a
    non-positive one). A whole part beyond the split bound is capped just past it, so the split
    fails clearly instead of overflowing."""
    whole = nw.col(f"{prefix}_whole")
    frac = nw.col(f"{prefix}_frac")
    cap = lazy_allocation.MAX_TOTAL_WEIGHT // 10**WEIGHT_SCALE + 1
    capped = nw.max_horizontal(nw.min_horizontal(whole, nw.lit(cap, nw.Int64)), nw.lit(0, nw.Int64))
    micro = capped * 10**WEIGHT_SCALE + _exact_div(
        frac - frac % _FRAC_PER_WEIGHT_UNIT, _FRAC_PER_WEIGHT_UNIT
    )
    return (
        nw.when(whole.is_null() | frac.is_null() | (whole < 0) | (frac < 0))
        .then(nw.lit(0, nw.Int64))
        .otherwise(micro)
        .cast(nw.Int64)
    )


def _first_scope(scopes: nw.LazyFrame, active_scopes: nw.LazyFrame) -> nw.LazyFrame:
    """Per ``charge_id``, its narrowest scope (lowest ``scope_rank``) among ``active_scopes``."""
    return (
        scopes.join(active_scopes, on="scope_key", how="inner")
        .group_by("charge_id")
        .agg(nw.col("scope_rank").min())
        .join(scopes, on=["charge_id", "scope_rank"], how="inner")
        .select("charge_id", "scope_key")
    )


def _normalized(whole: nw.Expr, frac: nw.Expr, name: str) -> list[nw.Expr]:
    """A (whole, frac) pair with ``|frac| < 1e18`` brought to one sign (a borrow of one unit)."""
    borrow = (
        nw.when((whole > 0) & (frac < 0))
        .then(nw.lit(-1, nw.Int64))
        .when((whole < 0) & (frac > 0))
        .then(nw.lit(1, nw.Int64))
        .otherwise(nw.lit(0, nw.Int64))
    )
    return [
        (whole + borrow).cast(nw.Int64).alias(f"{name}_whole"),
        (frac - borrow * _FRAC_UNIT).cast(nw.Int64).alias(f"{name}_frac"),
    ]


def _rest_is_zero(amount: str) -> nw.Expr:
    """Whether ``amount`` minus its claimed part (:func:`_scaled_half_up` of ``_claimed`` /
    ``_idle_total``) is zero, from the inputs alone: with ``A = |amount|`` in 1e-18 units, the rest
    ``A - round_half_up(A C / I)`` is zero exactly when ``2 A (I - C) <= I`` (so a filter on it
    does not reach into the long division; Spark pushes filters down a plan by inlining)."""
    whole, frac = nw.col(f"{amount}_whole"), nw.col(f"{amount}_frac").abs()
    idle, gap = nw.col("_idle_total"), nw.col("_idle_total") - nw.col("_claimed")
    half = _exact_div(idle - idle % 2, 2)
    # A (I - C) <= floor(I / 2)  <=>  A <= floor(floor(I / 2) / (I - C)), all below 2**53
    largest = nw.when(gap > 0).then(_exact_div(half - half % gap, gap))
    return (gap == 0) | ((whole == 0) & (frac <= largest))


def _scaled_half_up(
    frame: nw.LazyFrame, numerator: str, denominator: str, prefix: str
) -> nw.LazyFrame:
    """Add ``<prefix><m>_whole`` / ``_frac`` for each amount ``m`` of :data:`MONEY`: the amount
    times ``numerator / denominator`` (0 <= numerator <= denominator <= MAX_SCOPE_IDLE_MS, per row)
    in 1e-18 units, its magnitude rounded half up, with the amount's sign.

    That is the first part of the row core's two-way split ``split_exact(amount, {"claimed": C,
    "rest": I - C})``: the two floors leave at most one unit, which goes to the larger remainder,
    ``'claimed'`` on a tie. Row by row: long division on the amount's base-1000 digits from the top
    (every step below 2**63), the quotient's digits summed as they come (Horner: the fraction's
    below 2.002e18, the whole part's at most the amount's). The digits are columns and each step
    reads only columns: narwhals writes a modulo and a division on Spark as several copies of their
    operands, so inlined digits would make each step's expression, and Spark's analysis of every
    later step, several times larger. The reserved split built on it is one exact split, not a
    split of a split's plan.
    """
    pres = {m: f"_{prefix}{m}_" for m in MONEY}
    num, den = nw.col(numerator), nw.col(denominator)

    def digit(m: str, i: int) -> nw.Expr:
        if i >= FRACTION_LIMBS:
            return _limb(nw.col(f"{m}_whole").abs(), i - FRACTION_LIMBS)
        return _limb(nw.col(f"{m}_frac").abs(), i)

    frame = frame.with_columns(
        *(
            expr
            for m, pre in pres.items()
            for expr in (
                nw.when((nw.col(f"{m}_whole") < 0) | (nw.col(f"{m}_frac") < 0))
                .then(nw.lit(-1))
                .otherwise(nw.lit(1))
                .cast(nw.Int64)
                .alias(pre + "sign"),
                nw.lit(0, nw.Int64).alias(pre + "carry"),
                nw.lit(0, nw.Int64).alias(pre + "w"),
                nw.lit(0, nw.Int64).alias(pre + "f"),
                *(digit(m, i).alias(f"{pre}d{i}") for i in range(LIMBS)),
            )
        )
    )
    for i in reversed(range(LIMBS)):
        exprs = []
        for pre in pres.values():
            acc = pre + ("w" if i >= FRACTION_LIMBS else "f")
            step = nw.col(pre + "carry") * BASE + nw.col(f"{pre}d{i}") * num
            remainder = step % den
            exprs += [
                (nw.col(acc) * BASE + _exact_div(step - remainder, den)).alias(acc),
                remainder.alias(pre + "carry"),
            ]
        frame = frame.with_columns(*exprs)

    def signed(m: str, pre: str) -> list[nw.Expr]:
        up = nw.when(nw.col(pre + "carry") * 2 >= den).then(1).otherwise(0)
        units = nw.col(pre + "f") + up
        frac = units % _FRAC_UNIT
        whole = nw.col(pre + "w") + _exact_div(units - frac, _FRAC_UNIT)
        return [
            (whole * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{prefix}{m}_whole"),
            (frac * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{prefix}{m}_frac"),
        ]

    frame = frame.with_columns(*(expr for m, pre in pres.items() for expr in signed(m, pre)))
    return frame.drop(
        *(f"{pre}{part}" for pre in pres.values() for part in ("sign", "carry", "w", "f")),
        *(f"{pre}d{i}" for pre in pres.values() for i in range(LIMBS)),
    )


def claim_reserved_idle(
    idle_rows: nw.LazyFrame, claims: nw.LazyFrame
) -> tuple[nw.LazyFrame, nw.LazyFrame]:
    """Lazy :func:`gpucost.core.allocation.claim_reserved_idle`: reserved-but-unused GPU time pays
    for
    idle first.

    ``idle_rows``: ``charge_id`` (unique), ``reservation_scope_key``, ``idle_gpu_ms`` and the three
    amounts as whole / frac pairs; other columns pass through to the remaining rows. ``claims``:
    ``reservation_scope_key``, ``reservation_id``, ``team_id``, ``project_id``, ``unused_gpu_ms``.

    Within a scope with idle ``I`` (its rows' positive ``idle_gpu_ms``, at most
    :data:`MAX_SCOPE_IDLE_MS`) and unused reservations ``U``, every idle row with positive idle
    time is split ``{claimed: C, rest: I - C}`` with ``C = min(U, I)`` (row by row,
    :func:`_scaled_half_up`), and its claimed part across the holders by unused time (ties by
    ``(reservation_id, team_id, project_id)``). Returns ``(reserved, remaining)``: the reserved rows
    (:data:`RESERVED_COLUMNS`, ``recipient`` = ``idle_policy`` = ``reservation``) and the idle rows
    as the row core leaves them: unchanged where the scope has no holder or the row no idle time,
    else their rest (dropped when all three amounts are zero), with ``idle_rows``' columns.
    """
    columns = idle_rows.collect_schema().names()
    scope = nw.coalesce(nw.col("reservation_scope_key").cast(nw.String), nw.lit(_NO_SCOPE))
    holders = (
        claims.with_columns(
            nw.col("unused_gpu_ms").fill_null(0).cast(nw.Int64).alias("weight"),
            scope.alias("_scope"),
            *(nw.col(c).cast(nw.String) for c in ("reservation_id", "team_id", "project_id")),
        )
        .filter(nw.col("weight") > 0)
        .group_by("_scope", "reservation_id", "team_id", "project_id")
        .agg(nw.col("weight").sum().cast(nw.Int64))
    )
    unused = holders.group_by("_scope").agg(nw.col("weight").sum().cast(nw.Int64).alias("_unused"))
    rows = idle_rows.with_columns(
        scope.alias("_scope"), nw.col("idle_gpu_ms").fill_null(0).cast(nw.Int64).alias("_idle")
    )
    idle_totals = (
        rows.with_columns(nw.max_horizontal(nw.col("_idle"), nw.lit(0, nw.Int64)).alias("_idle"))
        .group_by("_scope")
        .agg(nw.col("_idle").sum().cast(nw.Int64).alias("_idle_total"))
    )
    rows = rows.join(idle_totals, on="_scope", how="left").join(unused, on="_scope", how="left")
    eligible = ~nw.col("_unused").is_null() & (nw.col("_idle") > 0)
    claimed = rows.filter(eligible).with_columns(
        nw.min_horizontal(nw.col("_unused"), nw.col("_idle_total")).cast(nw.Int64).alias("_claimed")
    )
    biggest = (
        idle_totals.join(unused, on="_scope", how="inner")
        .select(nw.col("_idle_total").max())
        .collect()
        .item()
    )
    if biggest is not None and int(biggest) > MAX_SCOPE_IDLE_MS:
        raise WeightBoundError(
            f"a reservation scope's idle time {biggest} ms exceeds the lazy core's exact bound"
            f" {MAX_SCOPE_IDLE_MS} ms; "
            "gpucost.core.allocation.claim_reserved_idle is exact at any size"
        )
    holder_weights = (
        claimed.select("charge_id", "_scope", nw.col("reservation_scope_key").alias("scope_key"))
        .join(holders, on="_scope", how="inner")
        .with_columns(_tie("reservation_id", "team_id", "project_id").alias("_tie"))
    )
    claimed = _scaled_half_up(claimed, "_claimed", "_idle_total", "_c_")
    reserved = split_lines(
        claimed.select("charge_id", *(nw.col(f"_c_{c}").alias(c) for c in MONEY_COLUMNS)),
        holder_weights,
        line_key="charge_id",
        tie_key="_tie",
        money=MONEY,
    ).select(
        "charge_id",
        nw.lit(None, nw.String).alias("workload_id"),
        nw.lit("reservation").alias("recipient"),
        nw.lit("reservation").alias("idle_policy"),
        "reservation_id",
        "team_id",
        "project_id",
        nw.col("scope_key").cast(nw.String),
        nw.lit(None, nw.String).alias("idle_reason"),
        *MONEY_COLUMNS,
    )
    kept = rows.filter(~eligible).select(columns)
    # a rest of zero in all three amounts is dropped (tested on the amounts before the claim)
    rest = (
        claimed.filter(~nw.all_horizontal(*(_rest_is_zero(m) for m in MONEY), ignore_nulls=False))
        .with_columns(
            *(
                expr
                for m in MONEY
                for expr in _normalized(
                    nw.col(f"{m}_whole") - nw.col(f"_c_{m}_whole"),
                    nw.col(f"{m}_frac") - nw.col(f"_c_{m}_frac"),
                    m,
                )
            )
        )
        .select(columns)
    )
    return reserved, nw.concat([kept, rest], how="vertical")


def spread_idle_with_reservations(
    idle_rows: nw.LazyFrame,
    claims: nw.LazyFrame,
    idle_scopes: nw.LazyFrame,
    weights: nw.LazyFrame,
    policy: str = "proportional",
) -> nw.LazyFrame:
    """int_gpu_idle_costs_spread's logic: :func:`claim_reserved_idle`, then
    :func:`gpucost.core.lazy_allocation.spread_idle` of what remains; the rows of both with
    :data:`IDLE_SPREAD_COLUMNS` (a column one side lacks is null)."""
    reserved, remaining = claim_reserved_idle(idle_rows, claims)
    spread = lazy_allocation.spread_idle(remaining, idle_scopes, weights, policy)

    def aligned(frame: nw.LazyFrame) -> nw.LazyFrame:
        have = set(frame.collect_schema().names())
        return frame.select(
            *(
                nw.col(c) if c in have else nw.lit(None, nw.String).alias(c)
                for c in IDLE_SPREAD_COLUMNS
            )
        )

    return nw.concat([aligned(reserved), aligned(spread)], how="vertical")


def spread_shared(lines: nw.LazyFrame, scopes: nw.LazyFrame, weights: nw.LazyFrame) -> nw.LazyFrame:
    """Lazy :func:`gpucost.core.allocation.spread_shared`: shared lines to owners by their placed
    cost.

    ``lines``: ``charge_id`` (unique), ``billed_cost_whole`` / ``_frac``, ``effective_cost_whole`` /
    ``_frac``. ``scopes``: ``charge_id``, ``scope_rank`` (1 = narrowest), ``scope_key`` (the row
    core's ``scope_keys``, one row each). ``weights``: ``scope_key``, ``recipient_id``,
    ``weight_whole`` / ``weight_frac`` (counted in micro-units, :func:`weight_units`).

    Each line goes to its narrowest scope with a positive weight, in proportion (ties by recipient);
    a line without one is one row with the reason ``no_owner_cost_in_period``. Returns
    ``charge_id``, ``recipient_id``, ``scope_key``, ``unallocated_reason`` and the three amounts
    (``allocation_ratio`` sums to 1 per line).
    """
    active = (
        weights.with_columns(weight_units().alias("weight"), nw.col("recipient_id").cast(nw.String))
        .filter(nw.col("weight") > 0)
        .group_by("scope_key", "recipient_id")
        .agg(nw.col("weight").sum().cast(nw.Int64))
    )
    chosen = _first_scope(scopes, active.select("scope_key").unique())
    kept = _ratio_one(lines).select("charge_id", *MONEY_COLUMNS)
    shares = chosen.join(active, on="scope_key", how="inner").with_columns(
        _tie("recipient_id").alias("_tie")
    )
    split = split_lines(kept, shares, line_key="charge_id", tie_key="_tie", money=MONEY).select(
        "charge_id",
        "recipient_id",
        nw.col("scope_key").cast(nw.String),
        nw.lit(None, nw.String).alias("unallocated_reason"),
        *MONEY_COLUMNS,
    )
    unowned = kept.join(chosen, on="charge_id", how="anti").select(
        "charge_id",
        nw.lit(None, nw.String).alias("recipient_id"),
        nw.lit(None, nw.String).alias("scope_key"),
        nw.lit("no_owner_cost_in_period").alias("unallocated_reason"),
        *MONEY_COLUMNS,
    )
    return nw.concat([split, unowned], how="vertical")


SHARED_WORKLOAD_METHOD = "shared_workload"


def split_shared_workloads(rows: nw.LazyFrame, shares: nw.LazyFrame) -> nw.LazyFrame:
    """Lazy :func:`gpucost.core.allocation.split_shared_workloads`: every allocation row of a shared
    workload becomes one row per consumer (team_id, project_id), by share weight.

    ``rows``: allocation rows with ``workload_id``, ``allocation_kind``, ``unallocated_reason`` and
    the three amounts as whole / frac pairs; every other column passes through (``team_id``,
    ``project_id``, ``attribution_*`` are replaced). ``shares``: ``workload_id``, ``team_id``,
    ``project_id``, ``share_id``, ``weight_whole`` / ``weight_frac`` (micro-units,
    :func:`weight_units`; a consumer listed twice is one, with the summed weight and the smallest
    share_id; shares without a workload_id are ignored). Rows of other workloads are not returned;
    a shared workload without a consumer weighing 1e-6 or more raises ``ValueError``, as in the row
    core.
    """
    shares = shares.filter(~nw.col("workload_id").is_null())
    consumers = (
        shares.with_columns(
            weight_units().alias("weight"),
            *(nw.col(c).cast(nw.String) for c in ("workload_id", "team_id", "project_id")),
            nw.col("share_id").cast(nw.String),
        )
        .filter(nw.col("weight") > 0)
        .group_by("workload_id", "team_id", "project_id")
        .agg(nw.col("weight").sum().cast(nw.Int64), nw.col("share_id").min())
    )
    weightless = (
        shares.select(nw.col("workload_id").cast(nw.String))
        .unique()
        .join(consumers.select("workload_id").unique(), on="workload_id", how="anti")
        .collect(backend="pyarrow")
        .to_native()
        .column("workload_id")
        .to_pylist()
    )
    if weightless:
        raise ValueError(
            f"shared workloads without a consumer weighing 1e-6 or more: {sorted(weightless)}"
        )
    columns = rows.collect_schema().names()
    shared = rows.with_columns(nw.col("workload_id").cast(nw.String)).join(
        consumers.select("workload_id").unique(), on="workload_id", how="semi"
    )
    # a key per row: its workload and its place among the workload's rows (identical rows split
    # identically, so their order does not matter)
    others = [c for c in columns if c != "workload_id"]
    shared = shared.with_columns(
        nw.concat_str(
            [
                nw.col("workload_id"),
                nw.lit("#"),
                nw.col("workload_id")
                .cum_count()
                .over("workload_id", order_by=others)
                .cast(nw.String),
            ]
        ).alias("_row")
    )
    replaced = {"team_id", "project_id", "attribution_rule_id", *MONEY_COLUMNS}
    weights = (
        shared.drop(*(c for c in columns if c in replaced))
        .join(consumers, on="workload_id", how="inner")
        .with_columns(_tie("team_id", "project_id").alias("_tie"))
    )
    split = split_lines(
        shared.select("_row", *MONEY_COLUMNS),
        weights,
        line_key="_row",
        tie_key="_tie",
        money=MONEY,
    )
    reason = nw.col("unallocated_reason").cast(nw.String).fill_null("")
    kind = nw.col("allocation_kind").cast(nw.String)
    set_columns = {
        "team_id": nw.col("team_id"),
        "project_id": nw.col("project_id"),
        "allocation_kind": nw.when(kind == "unallocated")
        .then(
            nw.when(reason.str.starts_with("gpu_idle_share_of_"))
            .then(nw.lit("idle"))
            .otherwise(nw.lit("usage"))
        )
        .otherwise(kind),
        "attribution_method": nw.lit(SHARED_WORKLOAD_METHOD),
        "attribution_rule_id": nw.col("share_id"),
        "attribution_confidence": nw.lit(1.0, nw.Float64),
        "unallocated_reason": nw.lit(None, nw.String),
    }
    out = [set_columns[c].alias(c) if c in set_columns else nw.col(c) for c in columns]
    out += [expr.alias(c) for c, expr in set_columns.items() if c not in columns]
    return split.select(*out)
