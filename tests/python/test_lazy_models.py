"""The allocation's Python models on their lazy cores inside dbt equal the same models on the row cores.

The generated month is built with the default var gpucost_lazy_min_rows (its inputs are below it: row
cores); a copy of that warehouse then re-runs the allocation's Python models with the var at 0, so every
one of them takes its lazy path (relations in, a relation out), and each table must equal the row
cores' row for row (except all, both ways; money compared as DECIMAL(38, 18)).
"""

from __future__ import annotations

import duckdb

LAZY_MODELS = (
    "int_gpu_node_line_parts",
    "int_gpu_costs_prorated",
    "int_node_compute_costs_prorated",
    "int_volume_costs_prorated",
)


def test_lazy_models_equal_row_models(generated_warehouse):
    lazy_path = generated_warehouse.copy("lazy_models")
    result = generated_warehouse.dbt(
        "run",
        "--select",
        *LAZY_MODELS,
        "--vars",
        "{gpucost_lazy_min_rows: 0}",
        warehouse=lazy_path,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "running the row core" not in result.stdout + result.stderr
    with duckdb.connect(str(generated_warehouse.path), read_only=True) as con:
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
