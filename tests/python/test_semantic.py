"""The semantic layer: MetricFlow metrics against the marts, the exposures, and complete dbt docs.

`mf` (dbt-metricflow) reads `<project dir>/target/semantic_manifest.json` (the path is fixed, whatever
--target-path dbt used) and the profile from DBT_PROFILES_DIR. So that the tests never write into the
repo's own target/ or logs/, they run dbt parse and mf in a scratch project dir whose files are symlinks
to the repo's, against a copy of the session warehouse.

MetricFlow computes every sum in the warehouse on the marts' exact DECIMAL(38,18) columns, but its CLI
converts results to Python floats before printing or writing CSV. So the CLI's numbers are compared to
the marts rounded to the cent, and the SQL MetricFlow generates (`mf query --explain`) is run directly
in DuckDB and compared exactly.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pytest

from tests.python.conftest import PROJECT_DIR, Warehouse, run_dbt
from tests.python.landing_zones import in_process

pytestmark = pytest.mark.warehouse

# Repo entries the scratch project dir does not link to: dbt and mf write there.
WRITTEN_ENTRIES = {"target", "logs"}

METRICS = {
    "billed_cost",
    "effective_cost",
    "gpu_cost",
    "idle_cost",
    "unallocated_cost",
    "gpu_hours",
    "total_gpu_hours",
    "used_gpu_hours",
    "cost_per_gpu_hour",
    "utilisation",
    "waste",
    "inference_cost",
    "inference_tokens",
    "token_inference_cost",
    "cost_per_million_tokens",
}

PUBLIC_MARTS = {
    "fct_cost_allocation",
    "fct_chargeback_monthly",
    "fct_gpu_usage",
    "rpt_reconciliation",
    "dim_teams",
    "dim_projects",
}


def cents(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def cli_cents(cell: str) -> Decimal:
    """A money cell of mf's CSV (a float's repr) rounded to the cent."""
    return cents(Decimal(cell))


@dataclass
class SemanticProject:
    """A scratch dbt project dir (symlinks to the repo) with a parsed semantic manifest."""

    root: Path
    warehouse: Path
    landing: Path

    def env(self) -> dict[str, str]:
        return os.environ | {
            "GPUCOST_LANDING_DIR": str(self.landing),
            "GPUCOST_WAREHOUSE": str(self.warehouse),
            "DBT_PROJECT_DIR": str(self.root),
            "DBT_PROFILES_DIR": str(self.root),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        }

    def mf(self, *args: str) -> subprocess.CompletedProcess:
        """``mf <args>``: the dbt-metricflow CLI's own command, run in this process from the scratch
        project (a started ``mf`` spends about 3.5 s importing and loading before each query, which
        takes 0.1-0.7 s here; measured 2026-11-26)."""
        from click.testing import CliRunner
        from dbt_metricflow.cli.main import cli

        with in_process(self.root, self.env()):
            result = CliRunner().invoke(cli, list(args))
        output = f"mf {' '.join(args)}\n{result.output[-4000:]}{result.stderr[-4000:]}"
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            output += "".join(traceback.format_exception(result.exception))[-4000:]
        assert result.exit_code == 0, output
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)

    def mf_command(self, *args: str) -> subprocess.CompletedProcess:
        """``mf <args>`` as a command of its own: for ``validate-configs``, whose progress lines (the
        validations it passed) go to the stream its spinner library bound when it was imported, not
        to the one ``mf`` above reads."""
        result = subprocess.run(
            [str(Path(sys.executable).with_name("mf")), *args],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, (
            f"mf {' '.join(args)}\n{result.stdout[-4000:]}{result.stderr[-4000:]}"
        )
        return result

    def query(self, *args: str) -> list[dict[str, str]]:
        """`mf query <args> --csv`, as rows of strings."""
        out = self.root / "query.csv"
        out.unlink(missing_ok=True)
        self.mf("query", *args, "--csv", str(out), "--quiet")
        with out.open(newline="", encoding="utf-8") as handle:
            return list(csv.DictReader(handle))

    def exact(self, *args: str) -> list[tuple]:
        """Run the SQL MetricFlow generates for a query directly in DuckDB (exact DECIMAL results)."""
        sql = self.mf("query", *args, "--explain", "--quiet").stdout
        assert "select" in sql.lower(), sql
        with duckdb.connect(str(self.warehouse), read_only=True) as con:
            return con.sql(sql).fetchall()

    def marts(self, query: str) -> list[tuple]:
        with duckdb.connect(str(self.warehouse), read_only=True) as con:
            return con.sql(query).fetchall()


@pytest.fixture(scope="module")
def semantic_project(generated_warehouse: Warehouse, tmp_path_factory) -> SemanticProject:
    root = tmp_path_factory.mktemp("semantic_project")
    for entry in PROJECT_DIR.iterdir():
        if entry.name not in WRITTEN_ENTRIES:
            (root / entry.name).symlink_to(entry)
    warehouse = generated_warehouse.copy("semantic_layer")
    # dbt parse writes <root>/target/semantic_manifest.json, where mf looks for it.
    parsed = run_dbt(generated_warehouse.landing, warehouse, root, "parse")
    assert parsed.returncode == 0, parsed.stdout[-4000:] + parsed.stderr[-2000:]
    assert (root / "target" / "semantic_manifest.json").exists()
    return SemanticProject(root=root, warehouse=warehouse, landing=generated_warehouse.landing)


def test_mf_validates_the_semantic_layer_against_the_warehouse(semantic_project):
    result = semantic_project.mf_command("validate-configs")
    assert "Successfully validated the semantics of built manifest" in result.stdout
    assert "Successfully validated metrics against data warehouse" in result.stdout
    assert "ERRORS: 0" in result.stdout

    listed = semantic_project.mf("list", "metrics").stdout
    names = {line.split(":")[0].strip(" •") for line in listed.splitlines() if ":" in line}
    assert names >= METRICS, listed


def test_every_semantic_object_is_described(semantic_project):
    manifest = json.loads((semantic_project.root / "target" / "semantic_manifest.json").read_text())
    undocumented = []
    for model in manifest["semantic_models"]:
        objects = [model, *model["entities"], *model["dimensions"], *model["measures"]]
        undocumented += [
            f"{model['name']}.{item['name']}"
            for item in objects
            if not (item.get("description") or "").strip()
        ]
    undocumented += [
        m["name"] for m in manifest["metrics"] if not (m.get("description") or "").strip()
    ]
    assert undocumented == []
    assert {m["name"] for m in manifest["metrics"]} == METRICS
    assert {m["name"] for m in manifest["semantic_models"]} == {
        "cost_allocation",
        "gpu_usage",
        "teams",
        "projects",
        "gpu_nodes",
        "inference_unit_cost",
    }
    spines = {
        spine["node_relation"]["alias"]: spine["primary_column"]
        for spine in manifest["project_configuration"]["time_spines"]
    }
    assert spines == {
        "metricflow_time_spine": {"name": "date_day", "time_granularity": "day"},
        "metricflow_time_spine_hour": {"name": "hour_at", "time_granularity": "hour"},
    }


def test_gpu_cost_by_team_equals_the_marts(semantic_project):
    expected = dict(
        semantic_project.marts(
            """
            select team_id, sum(billed_cost)
            from marts.fct_cost_allocation
            where line_class = 'gpu_node'
            group by 1
            """
        )
    )
    assert len(expected) >= 4 and sum(expected.values()) > 0

    rows = semantic_project.query("--metrics", "gpu_cost", "--group-by", "team")
    assert {row["team"]: cli_cents(row["gpu_cost"]) for row in rows} == {
        team: cents(total) for team, total in expected.items()
    }

    # The SQL behind the metric is exact: DECIMAL sums equal to the last 1e-18 unit.
    exact = semantic_project.exact("--metrics", "gpu_cost", "--group-by", "team")
    assert dict(exact) == expected
    assert all(isinstance(total, Decimal) for _, total in exact)


def test_idle_and_unallocated_cost_by_month_equal_the_marts(semantic_project):
    expected = {
        month: (idle, unallocated, billed)
        for month, idle, unallocated, billed in semantic_project.marts(
            """
            select
                cast(date_trunc('month', charge_period_start_at) as timestamp),
                sum(case when allocation_kind = 'idle' then billed_cost end),
                sum(case when allocation_kind = 'unallocated' then billed_cost end),
                sum(billed_cost)
            from marts.fct_cost_allocation
            group by 1
            """
        )
    }
    assert expected and all(
        idle > 0 and unallocated > 0 for idle, unallocated, _ in expected.values()
    )

    args = (
        "--metrics",
        "idle_cost,unallocated_cost,billed_cost",
        "--group-by",
        "metric_time__month",
    )
    rows = semantic_project.query(*args)
    got = {
        dt.datetime.fromisoformat(row["metric_time__month"]): (
            cli_cents(row["idle_cost"]),
            cli_cents(row["unallocated_cost"]),
            cli_cents(row["billed_cost"]),
        )
        for row in rows
    }
    assert got == {month: tuple(cents(v) for v in values) for month, values in expected.items()}

    exact = {
        month: (idle, unallocated, billed)
        for month, idle, unallocated, billed in semantic_project.exact(*args)
    }
    assert exact == expected

    # Over the whole month, billed_cost is the bill: the reconciliation report's total.
    (bill,) = semantic_project.marts("select sum(billed_cost) from marts.rpt_reconciliation")[0]
    assert sum(billed for _, _, billed in exact.values()) == bill


def test_gpu_hours_and_ratios_by_gpu_model_equal_fct_gpu_usage(semantic_project):
    expected = {
        model: values
        for model, *values in semantic_project.marts(
            """
            with
            usage as (
                select * from marts.fct_gpu_usage
            ),
            costs as (
                select
                    nodes.gpu_model,
                    sum(allocations.billed_cost) as gpu_cost
                from marts.fct_cost_allocation as allocations
                inner join semantic.sem_gpu_nodes as nodes
                    on allocations.cluster_id || '/' || allocations.node_name = nodes.node_id
                where allocations.line_class = 'gpu_node'
                group by 1
            ),
            hours as (
                select
                    gpu_model,
                    sum(case when usage_kind = 'usage' then gpu_hours end) as gpu_hours,
                    sum(gpu_hours) as total_gpu_hours,
                    sum(used_gpu_hours) as used_gpu_hours,
                    sum(wasted_cost) as waste
                from usage
                group by 1
            )
            select
                hours.gpu_model,
                costs.gpu_cost,
                hours.gpu_hours,
                hours.total_gpu_hours,
                hours.used_gpu_hours,
                hours.waste
            from hours
            inner join costs on hours.gpu_model = costs.gpu_model
            """
        )
    }
    assert len(expected) == 2  # the generator's H100 and A100 nodes

    metrics = (
        "gpu_cost,gpu_hours,total_gpu_hours,used_gpu_hours,waste,cost_per_gpu_hour,utilisation"
    )
    rows = semantic_project.query("--metrics", metrics, "--group-by", "node__gpu_model")
    assert {row["node__gpu_model"] for row in rows} == set(expected)
    for row in rows:
        gpu_cost, gpu_hours, total_hours, used_hours, waste = expected[row["node__gpu_model"]]
        assert cli_cents(row["gpu_cost"]) == cents(gpu_cost)
        assert cli_cents(row["waste"]) == cents(waste)
        # GPU-hours are DECIMAL(18,6) in the mart: the float keeps all six places.
        assert Decimal(row["gpu_hours"]).quantize(Decimal("0.000001")) == gpu_hours
        assert Decimal(row["total_gpu_hours"]).quantize(Decimal("0.000001")) == total_hours
        assert Decimal(row["used_gpu_hours"]).quantize(Decimal("0.000001")) == used_hours
        assert float(row["cost_per_gpu_hour"]) == pytest.approx(
            float(gpu_cost / gpu_hours), rel=1e-12
        )
        assert float(row["utilisation"]) == pytest.approx(
            float(used_hours / total_hours), rel=1e-12
        )
        assert 0 < float(row["utilisation"]) <= 1


def test_gpu_hours_by_team_and_cluster_equal_fct_gpu_usage(semantic_project):
    expected = {
        (team, cluster): hours
        for team, cluster, hours in semantic_project.marts(
            """
            select team_id, cluster_id, sum(gpu_hours)
            from marts.fct_gpu_usage
            where usage_kind = 'usage'
            group by 1, 2
            """
        )
    }
    exact = semantic_project.exact("--metrics", "gpu_hours", "--group-by", "team,cluster")
    assert {(team, cluster): hours for team, cluster, hours in exact} == expected
    (total,) = semantic_project.marts(
        "select sum(gpu_hours) from marts.fct_gpu_usage where usage_kind = 'usage'"
    )[0]
    assert sum(expected.values()) == total > 0


def test_saved_query_gives_the_monthly_team_showback(semantic_project):
    rows = semantic_project.query("--saved-query", "team_gpu_showback")
    assert rows
    assert set(rows[0]) == {
        "metric_time__month",
        "team",
        "gpu_cost",
        "gpu_hours",
        "cost_per_gpu_hour",
        "idle_cost",
        "unallocated_cost",
        "waste",
    }
    expected = dict(
        semantic_project.marts(
            "select team_id, sum(billed_cost) from marts.fct_cost_allocation "
            "where allocation_kind = 'unallocated' group by 1"
        )
    )
    got = {
        row["team"]: cli_cents(row["unallocated_cost"]) for row in rows if row["unallocated_cost"]
    }
    assert got == {team: cents(total) for team, total in expected.items()}


def test_dbt_docs_generate_documents_every_mart_column(generated_warehouse: Warehouse):
    warehouse = generated_warehouse.copy("semantic_docs")
    target = generated_warehouse.work / "target"
    started = time.time()
    result = generated_warehouse.dbt("docs", "generate", warehouse=warehouse)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    for artifact in ("catalog.json", "manifest.json"):
        assert (target / artifact).stat().st_mtime >= started - 1, f"{artifact} not written"

    manifest = json.loads((target / "manifest.json").read_text())
    catalog = json.loads((target / "catalog.json").read_text())
    marts = {
        unique_id: node
        for unique_id, node in manifest["nodes"].items()
        if node["resource_type"] == "model" and node["schema"] == "marts"
    }
    assert {node["name"] for node in marts.values()} >= PUBLIC_MARTS

    undocumented = []
    for unique_id, node in marts.items():
        documented = {
            name.lower(): (column.get("description") or "").strip()
            for name, column in node["columns"].items()
        }
        # Every column the warehouse really has (the catalog), not only those the YAML lists.
        built = catalog["nodes"][unique_id]["columns"]
        assert built, f"{node['name']} missing from the catalog"
        undocumented += [
            f"{node['name']}.{name}" for name in built if not documented.get(name.lower())
        ]
        assert (node.get("description") or "").strip(), f"{node['name']} has no description"
    assert undocumented == []

    exposures = {exposure["name"]: exposure for exposure in manifest["exposures"].values()}
    assert set(exposures) >= {"showback_dashboard", "team_statements"}
    depends = {
        name: {ref.split(".")[-1] for ref in exposure["depends_on"]["nodes"]}
        for name, exposure in exposures.items()
    }
    # what dashboard/app.py (gpucost.commands.dashboard_data) and gpucost.commands.statements really read
    assert depends["showback_dashboard"] == {
        "fct_cost_allocation",
        "fct_chargeback_monthly",
        "fct_gpu_usage",
        "fct_inference_unit_cost",
        "rpt_reconciliation",
        "rpt_budget_status",
        "rpt_attribution_review",
        "rpt_team_handovers",
        "dim_teams",
        "dim_projects",
    }
    assert depends["team_statements"] == {
        "fct_chargeback_monthly",
        "fct_cost_allocation",
        "fct_gpu_usage",
        "rpt_statement_workloads",
        "dim_teams",
        "dim_projects",
        "team_billing_modes",
    }
    assert exposures["showback_dashboard"]["type"] == "dashboard"
    assert exposures["team_statements"]["type"] == "application"
    assert all(exposure["owner"]["email"] for exposure in exposures.values())


def test_cost_per_million_tokens_by_team_is_the_marts_ratio(semantic_project):
    """The derived metric per team: the cost of the rows that counted tokens x 1e6 / their tokens
    (fct_inference_unit_cost), Triton's token-less cost left out of the numerator."""
    expected = {
        team: (cost, tokens)
        for team, cost, tokens in semantic_project.marts(
            """
            select team_id, sum(case when total_tokens > 0 then effective_cost else 0 end),
                   sum(total_tokens)
            from marts.fct_inference_unit_cost
            group by 1
            """
        )
    }
    assert expected and any(tokens > 0 for _, tokens in expected.values())
    rows = semantic_project.exact(
        "--metrics", "cost_per_million_tokens,token_inference_cost,inference_tokens",
        "--group-by", "team",
    )  # fmt: skip
    got = {team: (ratio, cost, tokens) for team, ratio, cost, tokens in rows}
    assert {team: (cost, tokens) for team, (_, cost, tokens) in got.items()} == expected
    for team, (cost, tokens) in expected.items():
        ratio = got[team][0]
        if tokens == 0:
            assert ratio is None
        else:  # a DOUBLE rate: equal to the exact ratio within a float's precision
            assert abs(Decimal(ratio) - cost * 1_000_000 / tokens) < Decimal("1e-9")
