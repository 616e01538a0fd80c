"""Step 4 of the allocation: shared bill lines and shared workloads.

:func:`spread_shared`: untagged overheads (storage, network, support, tax, credits) go to the
owners of their narrowest scope in proportion to the cost already placed on each.
:func:`split_shared_workloads`: every allocation row of a workload declared shared becomes one row
per consumer, by share weight. Weights that are amounts count in micro-units
(:func:`gpucost.core.split.weight_units`). Built on :func:`gpucost.core.split.split_lines`; rows
sum exactly to each line or allocation row."""

from __future__ import annotations

import narwhals as nw

from gpucost.core.split import (
    MONEY,
    MONEY_COLUMNS,
    narrowest_scope,
    ratio_one,
    repr_key,
    split_lines,
    weight_units,
)


def spread_shared(lines: nw.LazyFrame, scopes: nw.LazyFrame, weights: nw.LazyFrame) -> nw.LazyFrame:
    """Shared lines to the owners of their narrowest scope, by the cost placed on each.

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
    chosen = narrowest_scope(scopes, active.select("scope_key").unique())
    kept = ratio_one(lines).select("charge_id", *MONEY_COLUMNS)
    shares = chosen.join(active, on="scope_key", how="inner").with_columns(
        repr_key("recipient_id").alias("_tie")
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
    """Every allocation row of a shared workload becomes one row per consumer (team_id,
    project_id), by share weight.

    ``rows``: allocation rows with ``workload_id``, ``allocation_kind``, ``unallocated_reason`` and
    the three amounts as whole / frac pairs; every other column passes through (``team_id``,
    ``project_id``, ``attribution_*`` are replaced). ``shares``: ``workload_id``, ``team_id``,
    ``project_id``, ``share_id``, ``weight_whole`` / ``weight_frac`` (micro-units,
    :func:`weight_units`; a consumer listed twice is one, with the summed weight and the smallest
    share_id; shares without a workload_id are ignored). Rows of other workloads are not returned;
    a shared workload without a consumer weighing 1e-6 or more raises ``ValueError``.
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
        .with_columns(repr_key("team_id", "project_id").alias("_tie"))
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
