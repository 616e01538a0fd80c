"""Step 2 for storage: volume bill lines split over the pods that held the volume's claim.

A persistent volume is billed whether or not it is mounted; its line goes to the workloads whose
pods held its claim in the line's period, by claim-holding milliseconds (ties by workload id). A
line nobody held stays whole (unallocated), with the reason naming the claims or the volume. Built
on :func:`gpucost.core.split.split_lines`; each line's rows sum to it exactly (ratio 1).
"""

from __future__ import annotations

import narwhals as nw

from gpucost.core.split import MONEY, MONEY_COLUMNS, ratio_one, split_lines

VOLUME_CLAIM_BASIS = "volume_claim"


def _text(column: str) -> nw.Expr:
    """A text column, null when empty (the row core's truthiness)."""
    return nw.when(nw.col(column).fill_null("") != "").then(nw.col(column).cast(nw.String))


def allocate_volume_lines(lines: nw.LazyFrame, mounts: nw.LazyFrame) -> nw.LazyFrame:
    """Each volume line split over the pods that held its claim, by claim-holding milliseconds; a
    line nobody held stays whole (unallocated).

    ``lines``: ``charge_id``, ``billed_cost_whole`` / ``_frac``, ``effective_cost_whole`` /
    ``_frac``, ``claim_ids``, ``persistent_volume_ids``, ``volume_key`` (text, may be null).
    ``mounts``: ``charge_id``, ``workload_id``, ``mounted_ms``. Returns ``charge_id``,
    ``workload_id``, ``allocation_kind``, ``unallocated_reason``, ``allocation_basis``,
    ``mounted_ms`` and the three amounts as whole / frac pairs; each line's rows sum to it exactly
    (ratio 1), ties by workload id.
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
    kept = ratio_one(lines)
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
