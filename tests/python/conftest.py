"""Shared fixtures: build the warehouse once per session and reuse it."""

from __future__ import annotations

import decimal
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import narwhals as nw
import pytest

# pytest-xdist's workers run under execnet, whose `__main__` has neither `__spec__` nor
# `__file__`. Great Expectations imports `pyspark.sql.connect` when PySpark is installed (the
# `spark` extra), and that module takes such a `__main__` for a doctest run and calls
# `sys.exit(0)` (pyspark/sql/connect/utils.py, check_dependencies). Name the worker's main
# module so the import fails the ordinary way (ImportError, which GX handles) instead.
_main = sys.modules["__main__"]
if getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
    _main.__file__ = "pytest-xdist-worker"

# Tests add up DECIMAL(38, 18) amounts with Python's Decimal: give it the 38+ digits they need
# (the default context keeps 28 and would round the test's own sums, not the code under test).
decimal.getcontext().prec = 80

PROJECT_DIR = Path(__file__).resolve().parents[2]
SHARED_DATA = PROJECT_DIR.parent / "shared" / "data"
REAL_FOCUS = SHARED_DATA / "billing" / "focus1.0_sample_1000.csv"


@dataclass
class Warehouse:
    """A built DuckDB warehouse and the landing zone it was built from."""

    landing: Path
    path: Path
    work: Path

    def dbt(self, *args: str, warehouse: Path | None = None) -> subprocess.CompletedProcess:
        """Run a dbt command against this landing zone (and this or another warehouse file)."""
        return run_dbt(self.landing, warehouse or self.path, self.work, *args)

    def sql(self, query: str, warehouse: Path | None = None) -> list[tuple]:
        with duckdb.connect(str(warehouse or self.path), read_only=True) as con:
            return con.sql(query).fetchall()

    def copy(self, name: str) -> Path:
        """A copy of the warehouse file to tamper with or rebuild under other vars."""
        target = self.work / f"{name}.duckdb"
        shutil.copyfile(self.path, target)
        return target


def run_dbt(landing: Path, warehouse: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    from gpucost.commands.cli import dbt_env, dbt_executable

    env = dbt_env(landing, warehouse)
    command = [dbt_executable(), *args]
    command += ["--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR)]
    command += ["--target-path", str(work / "target"), "--log-path", str(work / "logs")]
    return subprocess.run(
        command, cwd=PROJECT_DIR, env=env, capture_output=True, text=True, check=False
    )


def _build(landing: Path, work: Path, *extra: str) -> Warehouse:
    work.mkdir(parents=True, exist_ok=True)
    warehouse = Warehouse(landing=landing, path=work / "gpucost.duckdb", work=work)
    result = warehouse.dbt("build", *extra)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    return warehouse


@pytest.fixture(scope="session")
def generated_month(tmp_path_factory) -> tuple[Path, dict]:
    from gpucost.synth import MonthConfig, generate_month

    landing = tmp_path_factory.mktemp("generated") / "landing"
    summary = generate_month(
        landing, MonthConfig(seed=7, nodes=4, days=3, step_seconds=600, clusters=2)
    )
    return landing, summary


@pytest.fixture(scope="session")
def generated_warehouse(generated_month, tmp_path_factory) -> Warehouse:
    landing, _ = generated_month
    return _build(landing, tmp_path_factory.mktemp("generated_build"))


@pytest.fixture(scope="session")
def real_focus_warehouse(tmp_path_factory) -> Warehouse:
    if not REAL_FOCUS.exists():
        pytest.fail(f"real FOCUS sample missing: {REAL_FOCUS} (the repo expects ../shared/data)")
    landing = tmp_path_factory.mktemp("real_focus") / "landing"
    (landing / "billing" / "focus").mkdir(parents=True)
    shutil.copyfile(REAL_FOCUS, landing / "billing" / "focus" / REAL_FOCUS.name)
    return _build(
        landing,
        tmp_path_factory.mktemp("real_focus_build"),
        "--vars",
        "{gpucost_tag_key_project: application, gpucost_tag_key_team: business_unit}",
    )


# Parallel runs (pytest-xdist, `-n 2 --dist loadgroup` in scripts/test.sh): tests sharing a built
# warehouse run on one worker so each session fixture is built once; other tests go by module, keeping
# module-scoped fixtures on one worker too.
_SHARED_BUILDS = ("generated_warehouse", "real_focus_warehouse")


@pytest.fixture(scope="session")
def spark():
    """A local PySpark session for the lazy cores' tests (one per test process)."""
    if os.environ.get("GPUCOST_REQUIRE_SPARK") == "1":
        import pyspark  # noqa: F401
    pyspark_sql = pytest.importorskip("pyspark.sql", reason="pip install -e '.[spark]'")
    session = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .appName("gpucost-lazy-allocation-tests")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # the long-division plans have many aliased expressions: constraint propagation is
        # exponential in them (as for the spark target, profiles.yml)
        .config("spark.sql.constraintPropagation.enabled", "false")
        # whole-stage code generation of these plans takes longer to compile than a few rows take
        # to interpret (a reservation plan: 30 s with it, 15 s without); results do not depend on it
        .config("spark.sql.codegen.wholeStage", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(params=["duckdb", "pyspark"])
def engine(request):
    """Turns a pyarrow table into a narwhals LazyFrame on the engine under test."""
    if request.param == "duckdb":
        con = duckdb.connect()
        yield lambda table: nw.from_native(con.from_arrow(table))
        con.close()
    else:
        session = request.getfixturevalue("spark")
        yield lambda table: nw.from_native(session.createDataFrame(table))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Group each test (xdist_group), then name its group in its node id for `--dist loadgroup`.

    pytest-xdist (3.8) tells its controller a test's group by appending ``@<group>`` to
    ``item._nodeid``, which pytest 9.2 no longer reads (a node id is ``item._id``, a NodeId): the
    groups were silently ignored and every session and module fixture was built on both workers
    (measured: test_bill_formats' six builds, 170 s, ran on both at once). So the suffix is
    appended here, after xdist's own hook (a no-op then, or the same suffix on older pytest)."""
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            shared = [name for name in _SHARED_BUILDS if name in getattr(item, "fixturenames", ())]
            group = shared[0] if shared else item.module.__name__
            item.add_marker(pytest.mark.xdist_group(group))
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = sorted(
            {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
             for m in item.iter_markers("xdist_group")}
        )  # fmt: skip
        suffix = "@" + "_".join(names)
        if item.nodeid.endswith(suffix):
            continue
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(item.nodeid + suffix)
        else:
            item._nodeid = item.nodeid + suffix
