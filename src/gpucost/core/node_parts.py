"""Step 1 of the allocation (and step 2 for CPU and memory): a GPU node's line in parts.

A GPU node also sells CPU and memory: a CPU-only pod scheduled on it holds cores and memory that
nobody else can use. :func:`split_line_parts` splits each line into GPU / CPU / memory parts by
weights (by default list price per unit x the node's units, seed ``node_resource_list_prices``);
:func:`gpu_part_lines` cuts out the GPU part for :func:`gpucost.core.gpu_time.prorate_node_lines`;
:func:`prorate_compute_parts` prorates the CPU and memory parts to the workloads that requested
them, each part's idle spread by the idle policy (:func:`gpucost.core.idle.spread_idle`) among the
workloads holding that part. Every part and row sums exactly to its line.
"""

from __future__ import annotations

import narwhals as nw

from gpucost.core.gpu_time import prorate_node_lines
from gpucost.core.idle import spread_idle
from gpucost.core.split import MONEY, MONEY_COLUMNS, checkpoint, split_lines

PARTS: tuple[str, ...] = ("gpu", "cpu", "memory")

_PART_MONEY = ("billed_cost", "effective_cost")


def split_line_parts(lines: nw.LazyFrame, weights: nw.LazyFrame) -> nw.LazyFrame:
    """Split each line into its GPU / CPU / memory parts, exactly.

    ``lines``: ``charge_id``, ``billed_cost_whole`` / ``_frac``, ``effective_cost_whole`` /
    ``_frac``, ``capacity_gpu_ms``. ``weights``: ``charge_id``, ``resource_part``, ``part_weight``,
    ``capacity_units`` (one row per line and part). A line without a positive weight stays whole as
    its GPU part. Returns ``charge_id``, ``resource_part``, ``part_weight``, ``capacity_units`` and
    the three amounts (``allocation_ratio``: the part's share of the line); each line's parts sum
    exactly to it.
    """
    positive = (
        weights.with_columns(
            nw.col("part_weight").fill_null(0).cast(nw.Int64),
            nw.col("capacity_units").fill_null(0).cast(nw.Int64),
            nw.col("resource_part").cast(nw.String),
        )
        .filter((nw.col("part_weight") > 0) & nw.col("resource_part").is_in(PARTS))
        .select("charge_id", "resource_part", "part_weight", "capacity_units")
    )
    whole = lines.join(positive.select("charge_id").unique(), on="charge_id", how="anti").select(
        "charge_id",
        nw.lit("gpu").alias("resource_part"),
        nw.lit(1, nw.Int64).alias("part_weight"),
        nw.col("capacity_gpu_ms").fill_null(0).cast(nw.Int64).alias("capacity_units"),
    )
    parts = nw.concat([positive, whole], how="vertical").with_columns(
        nw.col("part_weight").alias("weight"),
        nw.concat_str([nw.lit("'"), nw.col("resource_part"), nw.lit("'")]).alias("_tie"),
    )
    money = lines.select(
        "charge_id",
        *(f"{m}_{p}" for m in _PART_MONEY for p in ("whole", "frac")),
        nw.lit(1, nw.Int64).alias("allocation_ratio_whole"),
        nw.lit(0, nw.Int64).alias("allocation_ratio_frac"),
    )
    return split_lines(money, parts, line_key="charge_id", tie_key="_tie", money=MONEY).select(
        "charge_id", "resource_part", "part_weight", "capacity_units", *MONEY_COLUMNS
    )


def gpu_part_lines(lines: nw.LazyFrame, parts: nw.LazyFrame) -> nw.LazyFrame:
    """The node lines (every column but their
    amounts) with the GPU part's amounts and ratio; a line without a GPU part is left out."""
    gpu = parts.filter(nw.col("resource_part") == "gpu").select("charge_id", *MONEY_COLUMNS)
    kept = [c for c in lines.collect_schema().names() if c not in MONEY_COLUMNS]
    return lines.select(kept).join(gpu, on="charge_id", how="inner")


def prorate_compute_parts(
    parts: nw.LazyFrame,
    usages: nw.LazyFrame,
    owners: nw.LazyFrame | None = None,
    policy: str = "proportional",
) -> nw.LazyFrame:
    """Prorate the CPU and memory parts to the workloads that requested them, exactly.

    ``parts``: rows of :func:`split_line_parts` (GPU parts are ignored). ``usages``:
    ``charge_id``, ``resource_part``, ``workload_id``, ``requested_units``. ``owners``:
    ``workload_id``, ``owner_key`` (for the ``even`` policy; a workload without one is its own
    owner). Each part is prorated on the requested basis; its idle is spread by ``policy`` among
    the workloads that held the same part of the same line. Returns ``charge_id``,
    ``resource_part``, ``workload_id``, ``allocation_kind``, ``recipient``, ``allocation_basis``,
    ``basis_units``, ``unallocated_reason`` and the three amounts; they sum exactly to each part.
    """
    key = nw.concat_str([nw.col("charge_id"), nw.lit("#"), nw.col("resource_part")])
    compute = parts.filter(nw.col("resource_part") != "gpu").with_columns(key.alias("_key"))
    origin = compute.select("_key", "charge_id", "resource_part")
    prorated = prorate_node_lines(
        compute.select(
            nw.col("_key").alias("charge_id"),
            *MONEY_COLUMNS,
            nw.col("capacity_units").alias("capacity_gpu_ms"),
        ),
        usages.filter(nw.col("resource_part") != "gpu").select(
            key.alias("charge_id"),
            "workload_id",
            nw.col("requested_units").fill_null(0).cast(nw.Int64).alias("requested_gpu_ms"),
            nw.lit(0, nw.Int64).alias("used_gpu_ms"),
        ),
        basis="requested",
        utilised=False,
    )
    # computed once: the placed rows, the idle rows and the spread's weights all read it
    prorated = checkpoint(
        prorated.rename({"charge_id": "_key"}).join(origin, on="_key", how="inner")
    )
    placed = prorated.filter(nw.col("allocation_kind") != "idle").select(
        "charge_id",
        "resource_part",
        "workload_id",
        "allocation_kind",
        nw.lit(None, nw.String).alias("recipient"),
        nw.concat_str([nw.col("resource_part"), nw.lit(":requested")]).alias("allocation_basis"),
        nw.col("basis_gpu_ms").alias("basis_units"),
        nw.col("unallocated_reason").str.replace_all("gpu_", "").alias("unallocated_reason"),
        *MONEY_COLUMNS,
    )
    idle = prorated.filter(nw.col("allocation_kind") == "idle")
    usage = prorated.filter(nw.col("allocation_kind") == "usage").select(
        nw.col("_key").alias("scope_key"),
        "workload_id",
        nw.lit(None, nw.String).alias("recipient_group"),
        nw.col("basis_gpu_ms").alias("weight"),
    )
    if owners is None:
        usage = usage.with_columns(nw.col("workload_id").alias("owner_key"))
    else:
        usage = usage.join(
            owners.select("workload_id", nw.col("owner_key").alias("_owner")),
            on="workload_id",
            how="left",
        ).with_columns(nw.coalesce(nw.col("_owner"), nw.col("workload_id")).alias("owner_key"))
    spread = spread_idle(
        idle.select(nw.col("_key").alias("charge_id"), *MONEY_COLUMNS),
        idle.select(
            nw.col("_key").alias("charge_id"),
            nw.lit(1, nw.Int64).alias("scope_rank"),
            nw.col("_key").alias("scope_key"),
        ),
        usage.select("scope_key", "workload_id", "recipient_group", "owner_key", "weight"),
        policy=policy,
    )
    spread = spread.join(
        idle.select(
            nw.col("_key").alias("charge_id"),
            nw.col("charge_id").alias("_line"),
            "resource_part",
            nw.col("basis_gpu_ms").alias("basis_units"),
        ),
        on="charge_id",
        how="inner",
    ).select(
        nw.col("_line").alias("charge_id"),
        "resource_part",
        "workload_id",
        nw.lit("idle").alias("allocation_kind"),
        "recipient",
        nw.concat_str([nw.col("resource_part"), nw.lit(f":idle_{policy}")]).alias(
            "allocation_basis"
        ),
        "basis_units",
        nw.col("idle_reason").alias("unallocated_reason"),
        *MONEY_COLUMNS,
    )
    return nw.concat([placed, spread], how="vertical")


def prorate_gpu_parts(
    lines: nw.LazyFrame, parts: nw.LazyFrame, usages: nw.LazyFrame, basis: str = "requested"
) -> nw.LazyFrame:
    """int_gpu_costs_prorated's logic: the GPU part of each line (:func:`gpu_part_lines`) prorated
    by GPU time (:func:`gpucost.core.gpu_time.prorate_node_lines`)."""
    return prorate_node_lines(gpu_part_lines(lines, parts), usages, basis=basis)
