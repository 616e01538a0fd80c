"""Shared fixtures: the warehouses several suites read, built once per session and reused (the landing
zones and the sharing across workers are in tests/python/landing_zones.py)."""

from __future__ import annotations

import decimal
import os
import sys
from pathlib import Path

import narwhals as nw
import polars as pl
import pytest

from tests.python.landing_zones import (  # noqa: F401 (the suites import these from here too)
    NATIVE_CASES_VARS,
    PROJECT_DIR,
    REAL_FOCUS,
    REAL_FOCUS_VARS,
    SHARED_DATA,
    SHARED_FIXTURES,
    Warehouse,
    native_cases_landing,
    real_focus_landing,
    run_dbt,
    shared,
    shared_build,
    shared_fixture,
    shared_landing,
)
from tests.python.landing_zones import build as _build  # noqa: F401
from tests.python.landing_zones import generated_month as _generated_month

# pytest-xdist's workers run under execnet, whose `__main__` has neither `__spec__` nor
# `__file__`. Great Expectations imports `pyspark.sql.connect` when PySpark is installed (the
# `spark` extra), and that module takes such a `__main__` for a doctest run and calls
# `sys.exit(0)` (pyspark/sql/connect/utils.py, check_dependencies). Name the worker's main
# module so the import fails the ordinary way (ImportError, which GX handles) instead.
_main = sys.modules["__main__"]
if getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
    _main.__file__ = "pytest-xdist-worker"

# Under pytest-xdist, two workers share the machine's two cores: each dbt run uses one thread (the
# profile's GPUCOST_THREADS; a tiny build took 27.6 s of CPU on one thread against 30.3 s on two, as
# both threads mostly wait on each other's small queries). The session's generated warehouse still
# builds on two threads (conftest's generated_warehouse), so the multi-threaded path stays tested.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("GPUCOST_THREADS", "1")
    # and DuckDB runs each query on one thread (gpucost.engines.duckdb_plugin): the generated month's
    # build took 25.3-26.8 s of CPU on DuckDB's default (one thread per core) and 23.8-24.2 s on one
    # (measured 2026-11-26, machine idle; two workers on two cores oversubscribe them more)
    os.environ.setdefault("GPUCOST_DUCKDB_THREADS", "1")

# Tests add up DECIMAL(38, 18) amounts with Python's Decimal: give it the 38+ digits they need
# (the default context keeps 28 and would round the test's own sums, not the code under test).
decimal.getcontext().prec = 80


@pytest.fixture(scope="session", autouse=True)
def dbt_parse_template(tmp_path_factory) -> None:
    """The project parsed once per session; every run_dbt starts from it (landing_zones.PARSE_TEMPLATE)."""
    import tests.python.landing_zones as zones

    zones.PARSE_TEMPLATE = shared(tmp_path_factory, "dbt_parse", zones.parse_template)


# The warehouses several suites read are built once per session, whichever worker asks first
# (tests/python/landing_zones.py): their tests are grouped by module like any other, so the two workers
# share them out.
@shared_fixture
def generated_month(tmp_path_factory) -> tuple[Path, dict]:
    return shared_landing(tmp_path_factory, "generated_month", _generated_month)


@shared_fixture
def generated_warehouse(generated_month, tmp_path_factory) -> Warehouse:
    landing, _ = generated_month
    # the one build that runs dbt's unit tests under the default vars (landing_zones.run_dbt), on two
    # dbt threads and DuckDB's own default (every other test build uses one of each: see above)
    threads = ("GPUCOST_THREADS", "GPUCOST_DUCKDB_THREADS")
    saved = {name: os.environ.pop(name, None) for name in threads}
    try:
        return shared_build(
            tmp_path_factory, "generated_warehouse", lambda _: landing, unit_tests=True
        )
    finally:
        os.environ.update({name: value for name, value in saved.items() if value is not None})


@shared_fixture
def real_focus_warehouse(tmp_path_factory) -> Warehouse:
    return shared_build(
        tmp_path_factory,
        "real_focus_warehouse",
        lambda folder: real_focus_landing(folder / "landing"),
        *REAL_FOCUS_VARS,
    )


@shared_fixture
def hand_warehouse(tmp_path_factory) -> Warehouse:
    """The hand-built cases of the shared-GPU, allocation-basis and node-part suites (one landing
    zone, tests/python/hand_cases.py) under the default vars."""
    from tests.python import hand_cases

    return hand_cases.hand_warehouse(tmp_path_factory)


@shared_fixture
def hand_variant_warehouse(tmp_path_factory) -> Warehouse:
    """The same cases under the variants' vars (hand_cases.VARIANT_VARS)."""
    from tests.python import hand_cases

    return hand_cases.hand_variant_warehouse(tmp_path_factory)


@shared_fixture
def native_warehouse(tmp_path_factory) -> Warehouse:
    """The native bill samples and cases of test_native_bills and test_commitment_term, one build."""
    return shared_build(
        tmp_path_factory,
        "native_warehouse",
        lambda folder: native_cases_landing(folder / "landing"),
        *NATIVE_CASES_VARS,
    )


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
        # the JVM's quick JIT only (as scripts/spark_build.sh): these plans run once each, and the
        # two heaviest tests took 69.7 -> 58.1 s with it (measured 2026-11-26)
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(params=["polars", "pyspark"])
def engine(request):
    """Turns a pyarrow table into a narwhals LazyFrame on the engine under test: Polars (the core's
    engine under dbt-duckdb, gpucost.engines.lazy_io) or PySpark (dbt-spark / Databricks)."""
    if request.param == "polars":
        yield lambda table: nw.from_native(pl.from_arrow(table).lazy())
    else:
        session = request.getfixturevalue("spark")
        yield lambda table: nw.from_native(session.createDataFrame(table))


def _group(item) -> str:
    """The module, if the test uses a fixture of this suite that outlives one test; else the test."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return item.module.__name__
    for name, definitions in info.name2fixturedefs.items():
        if name in SHARED_FIXTURES:
            continue
        # pytest's and plugins' own fixtures have no baseid (tmp_path_factory, pytestconfig...)
        if any(d.baseid and d.scope != "function" for d in definitions):
            return item.module.__name__
    return item.nodeid


# The suites that take longest, longest first (seconds of each suite's tests in one CI run on an idle
# machine, 2026-11-26, after the builds were shared and trimmed: test_idempotency about 180, test_gate
# 110, test_bad_inputs 105, test_native_bills 85, test_attribution_warehouse 85, test_collect 75,
# test_docs 78, test_benchmark 72, test_warehouse 70, the Spark core tests 70, then the suites of about
# 20-50 s): they are handed out first, so the two workers do not end with one long suite each while
# the other idles (scripts/test.sh passes --no-loadscope-reorder, which keeps this order; xdist would
# otherwise order groups by their number of tests). Only the order depends on this list, never a result.
LONGEST_FIRST = (
    "test_idempotency",
    "test_gate",
    "test_bad_inputs",
    "test_native_bills",
    "test_attribution_warehouse",
    "test_collect",
    "test_docs",
    "test_benchmark",
    "test_warehouse",
    "test_core_allocation",
    "test_shared_gpus",
    "test_attribution_grid",
    "test_focus14",
    "test_dashboard",
    "test_deliveries",
    "test_bill_formats",
    "test_onprem",
    "test_reservations",
    "test_validation",
    "test_real_telemetry",
    "test_core_spread",
    "test_storage",
    "test_semantic",
    "test_statements",
)


def _rank(item) -> int:
    name = item.module.__name__.rsplit(".", 1)[-1]
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def _group_name(item) -> str:
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return _group(item)
    return str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))


def _second_unit_without_the_generated_warehouse(items: list) -> None:
    """xdist hands the first work unit (group) to one worker and the second to the other. When the
    first needs the session's generated warehouse (test_idempotency's do), both would otherwise wait
    on it at the start, one building, the other idle (its lock, landing_zones.shared): the longest
    suite-wide group (a module's, or a named one) that does not need it is moved to second place, so
    the other worker starts on that. (Checked 2026-11-26 by collection under LONGEST_FIRST: a
    test_idempotency test comes first and needs it, and test_native_bills' group, next in the list,
    has a test on it too, so test_bad_inputs, which does not, is moved to second place.)"""
    if not items or "generated_warehouse" not in items[0].fixturenames:
        return
    first = _group_name(items[0])
    groups: dict[str, list] = {}
    for item in items:
        groups.setdefault(_group_name(item), []).append(item)
    for name, members in groups.items():
        if "::" in name or name == first:
            continue  # a single test's group (its node id), or the first
        if not any("generated_warehouse" in m.fixturenames for m in members):
            rest = [item for item in items[1:] if _group_name(item) != name]
            items[:] = [items[0], *members, *rest]
            return


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Group each test (xdist_group) unless it names a group, then name its group in its node id for
    `--dist loadgroup`. A test that uses a module-scoped (or wider) fixture of this suite is grouped
    by its module, so that fixture is built once, on one worker; the session warehouses are shared by
    all workers (landing_zones.shared) and do not count. Any other test is a group of its own, so the
    two workers share out even one module's long tests (test_idempotency's builds).

    pytest-xdist (3.8) tells its controller a test's group by appending ``@<group>`` to
    ``item._nodeid``, which pytest 9.2 no longer reads (a node id is ``item._id``, a NodeId): the
    groups were silently ignored and every session and module fixture was built on both workers
    (measured: test_bill_formats' six builds, 170 s, ran on both at once). So the suffix is
    appended here, after xdist's own hook (a no-op then, or the same suffix on older pytest)."""
    items.sort(key=_rank)  # stable: the longest suites first, then collection order
    _second_unit_without_the_generated_warehouse(items)
    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(_group(item)))
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
