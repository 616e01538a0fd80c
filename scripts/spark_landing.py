"""The landing zone of the CI build on local Spark (scripts/spark_build.sh, docs/spark.md).

The smallest generated month that still gives the SQL models of the `sql_only` selector rows to
work on: two days (the telemetry gap and the late-joining node fall inside), one GPU node per
cluster plus the shared MIG / time-sliced node, one Slurm node, 15-minute samples, pod specs (hard
mode), the bill as on-prem items plus the FOCUS lines they do not cover, and the optional reference
CSVs (a pool, an FX rate, a reservation). Usage: python scripts/spark_landing.py <landing dir>
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpucost.synth import MonthConfig, generate_month
from gpucost.synth.bill_formats import render_bill

REFERENCE = {
    "allocation_pools/pools.csv": (
        "pool_id,priority,cluster_pattern,node_pattern,gpu_model_pattern,gpu_allocation_basis,"
        "complexity_weighting,description\n"
        "a100,10,,,A100,used,true,A100 nodes share by measured use\n"
        "never,20,^nope$,,,max,false,matches no node\n"
    ),
    "fx/rates.csv": (
        "from_currency,to_currency,rate_month,rate,rate_source\n"
        "EUR,USD,2026-10,1.0850,ECB reference rate 2026-10-30\n"
    ),
    "reservations/reservations.csv": (
        "reservation_id,cluster_id,team_id,project_id,valid_from,valid_to,reserved_gpus\n"
        "nlp-east,gpu-east,nlp,rag-search,2026-10-01,2026-10-31,2\n"
    ),
}


def main(out: Path) -> None:
    config = MonthConfig(
        seed=7, nodes=2, days=2, step_seconds=900, clusters=2, slurm_nodes=1, hard=True
    )
    generate_month(out, config)
    render_bill(out, "onprem")
    for name, text in REFERENCE.items():
        path = out / "reference" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
