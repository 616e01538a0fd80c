"""Step 3 of the allocation: idle GPU time, paid first by reservations, then spread by policy.

:func:`claim_reserved_idle`: reserved-but-unused GPU time pays for idle first (within a
reservation scope, each idle row's claimed part split over the holders by unused time).
:func:`spread_idle`: the rest goes by the idle policy (``proportional`` to the workloads' GPU time
in the idle row's narrowest active scope, ``even`` per owner, ``platform``, or ``visible``).
:func:`spread_idle_with_reservations` is the two composed (int_gpu_idle_costs_spread). A scope
list (narrow to wide) is a long frame: one row per (``charge_id``, ``scope_rank``, ``scope_key``),
rank 1 the narrowest. Built on :func:`gpucost.core.split.split_lines`; rows sum exactly to each
idle row.
"""

from __future__ import annotations

import narwhals as nw

from gpucost.core.money import MONEY_SCALE
from gpucost.core.split import (
    BASE,
    FRACTION_LIMBS,
    LIMBS,
    MAX_TOTAL_WEIGHT,
    MONEY,
    MONEY_COLUMNS,
    WeightBoundError,
    checkpoint,
    exact_div,
    limb,
    narrowest_scope,
    repr_key,
    split_lines,
)

IDLE_POLICIES = ("proportional", "even", "platform", "visible")

_NO_SCOPE = "\x00no scope"
"""Join key standing for a null reservation scope (the row core keys its dicts by ``None``)."""
_FRAC_UNIT = 10**MONEY_SCALE

MAX_SCOPE_IDLE_MS = MAX_TOTAL_WEIGHT
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
    half = exact_div(idle - idle % 2, 2)
    # A (I - C) <= floor(I / 2)  <=>  A <= floor(floor(I / 2) / (I - C)), all below 2**53
    largest = nw.when(gap > 0).then(exact_div(half - half % gap, gap))
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
            return limb(nw.col(f"{m}_whole").abs(), i - FRACTION_LIMBS)
        return limb(nw.col(f"{m}_frac").abs(), i)

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
                (nw.col(acc) * BASE + exact_div(step - remainder, den)).alias(acc),
                remainder.alias(pre + "carry"),
            ]
        frame = frame.with_columns(*exprs)

    def rounded_half_up(m: str, pre: str) -> list[nw.Expr]:
        up = nw.when(nw.col(pre + "carry") * 2 >= den).then(1).otherwise(0)
        units = nw.col(pre + "f") + up
        frac = units % _FRAC_UNIT
        whole = nw.col(pre + "w") + exact_div(units - frac, _FRAC_UNIT)
        return [
            (whole * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{prefix}{m}_whole"),
            (frac * nw.col(pre + "sign")).cast(nw.Int64).alias(f"{prefix}{m}_frac"),
        ]

    frame = frame.with_columns(
        *(expr for m, pre in pres.items() for expr in rounded_half_up(m, pre))
    )
    return frame.drop(
        *(f"{pre}{part}" for pre in pres.values() for part in ("sign", "carry", "w", "f")),
        *(f"{pre}d{i}" for pre in pres.values() for i in range(LIMBS)),
    )


def claim_reserved_idle(
    idle_rows: nw.LazyFrame, claims: nw.LazyFrame
) -> tuple[nw.LazyFrame, nw.LazyFrame]:
    """Reserved-but-unused GPU time pays for idle first.

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
    # each computed once (here and below): the claimed rows, the kept rows and the rest read them
    rows = checkpoint(
        rows.join(idle_totals, on="_scope", how="left").join(unused, on="_scope", how="left")
    )
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
            f"a reservation scope's idle time {biggest} ms exceeds the exact split's bound"
            f" {MAX_SCOPE_IDLE_MS} ms"
        )
    holder_weights = (
        claimed.select("charge_id", "_scope", nw.col("reservation_scope_key").alias("scope_key"))
        .join(holders, on="_scope", how="inner")
        .with_columns(repr_key("reservation_id", "team_id", "project_id").alias("_tie"))
    )
    claimed = checkpoint(_scaled_half_up(claimed, "_claimed", "_idle_total", "_c_"))
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
    :func:`spread_idle` of what remains; the rows of both with
    :data:`IDLE_SPREAD_COLUMNS` (a column one side lacks is null)."""
    reserved, remaining = claim_reserved_idle(idle_rows, claims)
    spread = spread_idle(remaining, idle_scopes, weights, policy)

    def aligned(frame: nw.LazyFrame) -> nw.LazyFrame:
        have = set(frame.collect_schema().names())
        return frame.select(
            *(
                nw.col(c) if c in have else nw.lit(None, nw.String).alias(c)
                for c in IDLE_SPREAD_COLUMNS
            )
        )

    return nw.concat([aligned(reserved), aligned(spread)], how="vertical")


def spread_idle(
    idle_rows: nw.LazyFrame,
    idle_scopes: nw.LazyFrame,
    weights: nw.LazyFrame,
    policy: str = "proportional",
) -> nw.LazyFrame:
    """Spread idle rows by the idle policy (``proportional``, ``even``, ``platform``, ``visible``).

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
    kept = checkpoint(idle_rows.select("charge_id", *MONEY_COLUMNS))

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
    chosen = checkpoint(narrowest_scope(idle_scopes, active.select("scope_key").unique()))
    idle_weights = chosen.join(active, on="scope_key", how="inner").with_columns(
        repr_key("owner_key", "_recipient").alias("_tie")
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
