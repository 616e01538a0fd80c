"""Step 2 of the allocation: the GPU part of each GPU node line prorated by GPU time.

Each line goes to the workloads that held its GPUs in its period, by the line's basis (GPU time
requested, used, or the larger of the two; optionally times each workload's task complexity), and
its idle GPU time (capacity minus what the workloads took) to an idle row that
:mod:`gpucost.core.idle` spreads; a line without telemetry stays whole (unallocated). Built on
:func:`gpucost.core.split.split_lines`; each line's rows sum to it exactly.
"""

from __future__ import annotations

import narwhals as nw

from gpucost.core.split import (
    MONEY,
    MONEY_COLUMNS,
    checkpoint,
    first_row,
    optional_column,
    ratio_one,
    repr_key,
    split_lines,
)

BASES = ("requested", "used", "max")
COMPLEXITY_UNIT = 1_000_000
"""A task-complexity weight of 1, in the millionths the cores count complexity in."""


def prorate_node_lines(
    lines: nw.LazyFrame, usages: nw.LazyFrame, basis: str = "requested", *, utilised: bool = True
) -> nw.LazyFrame:
    """Prorate each line by GPU time, exactly.

    ``lines``: ``charge_id``, ``billed_cost_whole`` / ``_frac``, ``effective_cost_whole`` /
    ``_frac``, ``capacity_gpu_ms``, and optionally ``allocation_ratio_whole`` / ``_frac`` (the
    share of the bill line these amounts are; default 1), ``gpu_allocation_basis`` (the line's
    pool basis; null: ``basis``) and ``complexity_weighting`` (null: false). ``usages``:
    ``charge_id``, ``workload_id``, ``requested_gpu_ms``, ``used_gpu_ms``, and optionally
    ``complexity_units`` (the task-complexity weight in millionths, > 0; null: 1,000,000).
    Returns ``charge_id``, ``workload_id`` (null for idle / unallocated), ``allocation_kind``,
    ``unallocated_reason``, ``allocation_basis``, ``basis_gpu_ms``, ``used_gpu_ms``, the three
    amounts and ``utilised_cost`` as whole / frac pairs (not with ``utilised=False``, which saves
    its split where nobody reads it). Each line's rows sum to it exactly (a workload with several
    usage rows of different complexity on one line takes the largest: the warehouse has one).
    """
    if basis not in BASES:
        raise ValueError(f"unknown allocation basis {basis!r}; expected one of {BASES}")
    if "allocation_ratio_whole" not in lines.collect_schema().names():
        lines = ratio_one(lines)
    lines = lines.with_columns(
        optional_column(lines, "gpu_allocation_basis", basis, nw.String).alias("_basis"),
        optional_column(lines, "complexity_weighting", False, nw.Boolean).alias("_weighting"),
    )
    unknown = first_row(lines.filter(~nw.col("_basis").is_in(BASES)), "_basis", "charge_id")
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
        optional_column(usages, "complexity_units", COMPLEXITY_UNIT, nw.Int64).alias("_cx"),
    ).filter(nw.col("_w") > 0)
    bad = first_row(taking.filter(nw.col("_cx") <= 0), "_cx")
    if bad is not None:
        raise ValueError(f"complexity weight must be positive, got {bad[0] / COMPLEXITY_UNIT}")
    workloads = (
        taking.group_by("charge_id", "workload_id")
        .agg(
            nw.col("_w").sum().cast(nw.Int64).alias("weight"),
            nw.col("_used").sum().cast(nw.Int64).alias("used_gpu_ms"),
            nw.col("_cx").max().cast(nw.Int64).alias("_cx"),
        )
        .with_columns(nw.col("workload_id").cast(nw.String), repr_key("workload_id").alias("_tie"))
    )
    # computed once: the taken totals, the split and the complexity stage all read it
    workloads = checkpoint(workloads)
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
    lines = checkpoint(lines)
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
    if first_row(weighted_lines, "charge_id") is not None:
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
    """Add the utilised share of each usage row's billed cost (the part its busy GPU time covers:
    ``cost x min(used, basis) / basis``, split exactly); zero on idle rows."""
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
