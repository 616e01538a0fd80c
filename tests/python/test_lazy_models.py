"""The allocation's Python models on their lazy cores inside dbt equal the same models on the row cores.

The generated month, with a landed GPU reservation added, is re-run twice from copies of its warehouse:
with the default var gpucost_lazy_min_rows (its inputs are below it: row cores) and with the var at 0,
so every allocation model takes its lazy path (relations in, a relation out). Each table must equal
the row cores' row for row (except all, both ways; money compared as DECIMAL(38, 18)).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from .conftest import run_dbt

LAZY_MODELS = (
    "int_gpu_node_line_parts",
    "int_gpu_costs_prorated",
    "int_node_compute_costs_prorated",
    "int_volume_costs_prorated",
    "int_gpu_idle_costs_spread",
    "int_shared_costs_spread",
)
# int_cost_allocations_shared_split: the generated month declares no shared workload; its lazy core
# is compared in test_attribution_warehouse, on a build that declares some


def _landing_with_reservation(landing: Path, tmp: Path, team: str, project: str) -> Path:
    """The generated month's landing zone (linked, not copied) plus a landed reservation of 4 GPUs
    on every cluster for ``team``: the month has none, and the idle model's claim must run."""
    mirror = tmp / "landing"
    mirror.mkdir()
    for entry in landing.iterdir():
        if entry.name != "reference":
            (mirror / entry.name).symlink_to(entry)
    reference = mirror / "reference"
    if (landing / "reference").is_dir():
        shutil.copytree(landing / "reference", reference, symlinks=True)
    (reference / "reservations").mkdir(parents=True, exist_ok=True)
    (reference / "reservations" / "quota.csv").write_text(
        "reservation_id,cluster_id,team_id,project_id,valid_from,valid_to,reserved_gpus\n"
        f"q-{team},*,{team},{project},2000-01-01,2100-12-31,4\n",
        encoding="utf-8",
    )
    return mirror


def test_lazy_models_equal_row_models(generated_warehouse, tmp_path):
    ((team, project),) = generated_warehouse.sql(
        "select team_id, project_id from marts.fct_cost_allocation"
        " where attribution_method = 'pod_label' group by 1, 2 order by sum(effective_cost) desc limit 1"
    )
    landing = _landing_with_reservation(generated_warehouse.landing, tmp_path, team, project)
    # both copies read the reservation; one runs the row cores (default var), the other the lazy ones
    claim = "stg_reference__gpu_reservations+,+int_gpu_idle_costs_spread"
    row_path, lazy_path = tmp_path / "row.duckdb", tmp_path / "lazy.duckdb"
    runs = ((row_path, (), "row"), (lazy_path, ("--vars", "{gpucost_lazy_min_rows: 0}"), "lazy"))
    for path, extra, core in runs:
        shutil.copyfile(generated_warehouse.path, path)
        result = run_dbt(landing, path, tmp_path, "run", "--select", claim, *LAZY_MODELS, *extra)
        printed = result.stdout + result.stderr
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
        assert "running the row core" not in printed
        # each model says which core it ran (the var reaches it: dbt passes a Python model only
        # the config keys its own file reads, test_python_model_config)
        for model in LAZY_MODELS:
            assert f"{model}: {core} core (" in printed, (model, core, printed[-3000:])
    with duckdb.connect(str(row_path), read_only=True) as con:
        con.execute(f"attach '{lazy_path}' as lazy (read_only)")
        for model in LAZY_MODELS:
            rows = con.sql(f"select count(*) from intermediate.{model}").fetchall()[0][0]
            assert rows > 0, model
            differ = con.sql(
                f"""select
                    (select count(*) from (
                        from intermediate.{model} except all from lazy.intermediate.{model})),
                    (select count(*) from (
                        from lazy.intermediate.{model} except all from intermediate.{model}))"""
            ).fetchall()
            assert differ == [(0, 0)], model
        # the month exercises the reservation claim, not only the policy's spread
        reserved = con.sql(
            "select count(*) from lazy.intermediate.int_gpu_idle_costs_spread"
            " where recipient = 'reservation'"
        ).fetchall()[0][0]
        assert reserved > 0
