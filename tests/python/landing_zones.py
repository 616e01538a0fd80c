"""Every landing zone the tests build from, and the warehouses built from them, made once per session.

Landing zones (each a function that writes one into a given folder):

- ``generated_month``: the session's generated month (seed 7, 4 nodes, 3 days, 2 clusters);
- ``small_month``: a one-day month of two nodes and one cluster (seed 11), with or without the Slurm
  queue, that the bad-input, delivery and bill-format suites add their cases to; ``small_month_cases``
  builds it once with the FOCUS 1.4 and inference suites' cases landed together;
- ``two_day_month``: two days of two nodes (seed 3), beside which the real telemetry files land;
- ``real_focus_landing``: the real FOCUS sample of ../shared/data;
- ``native_landing``: the real native bill samples (CUR, Azure EA, OCI), a GCP line, no FOCUS file;
- ``native_cases_landing``: the same samples with the native-bill and commitment-term suites' cases;
- ``rendered_landing``: a copy of a month whose FOCUS bill is rendered in a native format.

Sharing: ``shared`` makes a thing once per pytest session, across pytest-xdist workers (a file lock in
the session's base temp folder, which every worker of one session shares), so a warehouse that several
suites read is built once however the suites are spread over the workers. ``shared_build`` builds a
warehouse that way. Tests that change a shared warehouse change a copy (``Warehouse.copy``); tests
that change a shared landing zone change a copy (``copy_landing``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

PROJECT_DIR = Path(__file__).resolve().parents[2]
SHARED_DATA = PROJECT_DIR.parent / "shared" / "data"
REAL_FOCUS = SHARED_DATA / "billing" / "focus1.0_sample_1000.csv"
BILLING_SAMPLES = SHARED_DATA / "billing"

T = TypeVar("T")


# --- warehouses and dbt ---------------------------------------------------------------------------


def worker() -> str:
    """This test process's name: the pytest-xdist worker (gw0, gw1...) or ``main``."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@dataclass
class Warehouse:
    """A built DuckDB warehouse and the landing zone it was built from.

    ``work`` belongs to this test process (dbt's target and logs, copies): a shared warehouse's file
    is read by every worker, never written."""

    landing: Path
    path: Path
    work: Path

    def dbt(
        self, *args: str, warehouse: Path | None = None, unit_tests: bool = False
    ) -> subprocess.CompletedProcess:
        """Run a dbt command against this landing zone (and this or another warehouse file)."""
        return run_dbt(
            self.landing, warehouse or self.path, self.work, *args, unit_tests=unit_tests
        )

    def sql(self, query: str, warehouse: Path | None = None) -> list[tuple]:
        import duckdb

        with duckdb.connect(str(warehouse or self.path), read_only=True) as con:
            return con.sql(query).fetchall()

    def copy(self, name: str) -> Path:
        """A copy of the warehouse file to tamper with or rebuild under other vars, in a folder of
        its own under the same file name (``<work>/<name>/gpucost.duckdb``): dbt's profile names the
        warehouse by its file name (see PARSE_TEMPLATE), so a dbt run on the copy under the default
        vars reuses the partial parse instead of parsing the project in full."""
        target = self.work / name / WAREHOUSE_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.path, target)
        return target


# dbt's unit tests run a model on given rows: their result depends on neither the landing zone nor the
# warehouse. The session's generated warehouse runs them (``unit_tests=True``); every other ``dbt build``
# would only repeat them (8 unit tests, 15-18 % of a small build), and under other vars (another idle
# policy, tag keys, lookback) they would check rows written for the project's own vars.
NO_UNIT_TESTS = ("--exclude-resource-type", "unit_test")


# A build whose tables a test compares, row for row, with a build that ran the data tests (the session's
# generated warehouse, a fresh build of the same files): the data tests would only prove again what
# equal tables already prove. 26.0 -> 19.1 s of CPU for the generated month (measured 2026-11-26).
MODELS_ONLY = ("--exclude-resource-type", "test")


# A test's build, run or test writes neither dbt's debug log file (logs/dbt.log: every statement) nor
# manifest.json and run_results.json (unless it passes --write-json): its console log is the result's
# stdout. About 2.5 of a tiny build's 24 s of CPU (measured 2026-11-26, three builds each way).
NO_LOG_FILE = ("--log-level-file", "none")
NO_JSON = ("--no-write-json",)


# A partial-parse file of this project (dbt's target/partial_parse.msgpack), written once per session
# (conftest's ``dbt_parse_template``): each ``run_dbt`` starts from a copy, so dbt reparses only what the
# landing zone changes (the files that read it) instead of the whole project (about 3.5 s of CPU saved
# per build here). dbt reuses it only for the same profile: the warehouse is therefore always named
# relative to dbt's working folder (``GPUCOST_WAREHOUSE=<file name>``, run in the file's folder).
PARSE_TEMPLATE: Path | None = None
WAREHOUSE_NAME = "gpucost.duckdb"


def vars_template(args: tuple[str, ...] | list[str]) -> Path | None:
    """Where the partial parse of a dbt command under ``--vars`` is kept for the session's next
    command under the same vars (None without ``--vars`` or before PARSE_TEMPLATE is made): dbt ties
    a partial parse to the command line's vars and parses the whole project again under others, so
    the first build under some vars (the native bills' currency, the idempotency suite's lookback)
    leaves its parse here for the next one, which then reparses only what its landing zone changes."""
    import hashlib

    given = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--vars"]
    if not given or PARSE_TEMPLATE is None:
        return None
    digest = hashlib.sha256("\0".join(given).encode()).hexdigest()[:16]
    return PARSE_TEMPLATE.parent.parent / "vars" / f"{digest}.msgpack"


def keep_vars_template(args: tuple[str, ...] | list[str], target: Path) -> None:
    """After a dbt command: its partial parse becomes its vars' template, unless one exists (written
    under another name, then renamed: the other worker reads whole files only)."""
    template, parsed = vars_template(args), target / "partial_parse.msgpack"
    if template is None or template.exists() or not parsed.exists():
        return
    template.parent.mkdir(parents=True, exist_ok=True)
    partial = template.with_name(f"{template.name}.{os.getpid()}")
    shutil.copyfile(parsed, partial)
    os.replace(partial, template)


def parse_template(folder: Path) -> Path:
    """``dbt parse`` of this project into ``folder``; returns its partial-parse file.

    It starts from ``GPUCOST_TEST_PARSE_SEED`` when that names a file: scripts/test.sh parses the
    project before pytest in the same layout (the warehouse named relative to dbt's working folder),
    so dbt only checks the seed and keeps it (both workers wait for this parse: about 10 s of a
    full parse saved). A seed dbt cannot reuse costs nothing more than a full parse."""
    seed = os.environ.get("GPUCOST_TEST_PARSE_SEED")
    if seed and Path(seed).is_file():
        (folder / "target").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed, folder / "target" / "partial_parse.msgpack")
    result = run_dbt(folder / "landing", folder / WAREHOUSE_NAME, folder, "parse")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    return folder / "target" / "partial_parse.msgpack"


@dataclass
class DbtInvocation:
    """A dbt command on this project as ``run_dbt`` gives it: its arguments (after ``dbt``), the
    working folder (the warehouse file's) and the environment."""

    args: list[str]
    cwd: Path
    env: dict[str, str]


def dbt_invocation(
    landing: Path, warehouse: Path, work: Path, *args: str, unit_tests: bool = False
) -> DbtInvocation:
    """``dbt *args`` against a landing zone and a warehouse file, target and logs in ``work``, starting
    from the session's partial parse (PARSE_TEMPLATE): the warehouse is named relative to its folder.

    ``unit_tests``: whether a ``dbt build`` runs the unit tests; only when asked (the session's
    generated warehouse does): they run a model on the rows they give and expect the rows they name,
    under the project's vars, whatever the landing zone."""
    from gpucost.commands.cli import dbt_env

    if Path(warehouse).name != WAREHOUSE_NAME:
        # dbt's profile names the warehouse by its file name, and the partial parse is reused only
        # under the same profile: another name would parse the whole project again (about 5 s of CPU)
        raise ValueError(
            f"name the warehouse {WAREHOUSE_NAME} in a folder of its own, not {Path(warehouse).name}"
            " (PARSE_TEMPLATE)"
        )
    warehouse = Path(warehouse).resolve()
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    target = work / "target"
    if PARSE_TEMPLATE is not None and not (target / "partial_parse.msgpack").exists():
        target.mkdir(parents=True, exist_ok=True)
        under_vars = vars_template(args)
        template = under_vars if under_vars is not None and under_vars.exists() else PARSE_TEMPLATE
        shutil.copyfile(template, target / "partial_parse.msgpack")
    dbt_args = list(args)
    if args[:1] == ("build",) and not unit_tests:
        dbt_args += NO_UNIT_TESTS
    if args[:1] in (("build",), ("run",), ("test",)):
        dbt_args += NO_LOG_FILE
        if "--write-json" not in args:
            dbt_args += NO_JSON
    dbt_args += ["--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR)]
    dbt_args += ["--target-path", str(target), "--log-path", str(work / "logs")]
    return DbtInvocation(dbt_args, warehouse.parent, dbt_env(landing, Path(warehouse.name)))


def run_dbt(
    landing: Path, warehouse: Path, work: Path, *args: str, unit_tests: bool = False
) -> subprocess.CompletedProcess:
    """Run ``dbt_invocation(...)``: in this test process (``in_process_dbt``), or as the ``dbt``
    command under ``GPUCOST_TEST_DBT=subprocess``."""
    from gpucost.commands.cli import dbt_executable

    run = dbt_invocation(landing, warehouse, work, *args, unit_tests=unit_tests)
    if os.environ.get("GPUCOST_TEST_DBT") == "subprocess":
        result = subprocess.run(
            [dbt_executable(), *run.args],
            cwd=run.cwd,
            env=run.env,
            capture_output=True,
            text=True,
            check=False,
        )
    else:
        result = in_process_dbt(run.args, cwd=run.cwd, env=run.env)
    keep_vars_template(args, work / "target")
    return result


_IN_PROCESS_DBT = threading.Lock()


@contextlib.contextmanager
def in_process(cwd: Path, env: dict[str, str]) -> Iterator[None]:
    """Run a command's Python entry point in this process as if started in ``cwd`` under ``env``
    (dbt's, mf's): one at a time, as the working folder and the environment are the process's.

    dbt-duckdb keeps its DuckDB instance in a class attribute while its credentials stay equal, and
    every warehouse here has the same relative path (PARSE_TEMPLATE): it is closed after each run, so
    the next run opens its own file, and the file is free for the test to read."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    with _IN_PROCESS_DBT:
        saved_env, saved_cwd = dict(os.environ), Path.cwd()
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        try:
            yield
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            with DuckDBConnectionManager._LOCK:
                if DuckDBConnectionManager._ENV is not None:
                    DuckDBConnectionManager._ENV.close()
                    DuckDBConnectionManager._ENV = None


def in_process_dbt(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``dbt *args`` through dbt's Python API (``dbtRunner``) in this process, in ``cwd`` under
    ``env``: what the ``dbt`` command does, without starting Python and importing dbt, its adapter
    and the project's Python models' libraries for each build (a tiny build: 21.6-21.9 s of CPU
    instead of 26.9 s, measured 2026-11-26; docs/testing.md). dbt's console log is the result's
    stdout; its exit code is the CLI's (0 success, 1 a failed node, 2 an error)."""
    import io

    from dbt.cli.main import dbtRunner

    out, err = io.StringIO(), io.StringIO()
    with in_process(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        result = dbtRunner().invoke(args)
    code = 0 if result.success else 2 if result.exception is not None else 1
    if result.exception is not None:
        err.write(f"{type(result.exception).__name__}: {result.exception}\n")
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def build(landing: Path, work: Path, *extra: str, unit_tests: bool = False) -> Warehouse:
    """``dbt build`` of a landing zone into ``work/gpucost.duckdb``; fails the test unless it passes."""
    work.mkdir(parents=True, exist_ok=True)
    warehouse = Warehouse(landing=landing, path=work / "gpucost.duckdb", work=work)
    result = warehouse.dbt("build", *extra, unit_tests=unit_tests)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    return warehouse


# --- made once per session, across workers ------------------------------------------------------


def session_dir(tmp_path_factory) -> Path:
    """A folder every worker of this pytest session shares (the parent of the workers' base temps)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "shared"
    root.mkdir(parents=True, exist_ok=True)
    return root


def shared(tmp_path_factory, name: str, make: Callable[[Path], T]) -> T:
    """``make(folder)``, run once per session under a lock; other workers wait, then reuse its result.

    A failed ``make`` leaves nothing behind, so the next worker that asks runs (and fails) it again."""
    root = session_dir(tmp_path_factory)
    folder, done = root / name, root / f"{name}.result"
    with (root / f"{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if done.exists():
                return pickle.loads(done.read_bytes())
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            result = make(folder)
            done.write_bytes(pickle.dumps(result))
            return result
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# session fixtures made through ``shared``: a test using them needs no particular worker (conftest's
# xdist grouping skips them)
SHARED_FIXTURES: set[str] = set()


def shared_fixture(function):
    """A session fixture whose value is made once for all workers (through ``shared``)."""
    import pytest

    SHARED_FIXTURES.add(function.__name__)
    return pytest.fixture(scope="session")(function)


def shared_build(
    tmp_path_factory,
    name: str,
    make_landing: Callable[[Path], Path],
    *extra: str,
    unit_tests: bool = False,
) -> Warehouse:
    """The warehouse of ``make_landing(folder)`` (a landing zone), built once per session with
    ``dbt build *extra``; its ``work`` folder is this worker's own."""

    def make(folder: Path) -> Warehouse:
        return build(make_landing(folder), folder / "build", *extra, unit_tests=unit_tests)

    warehouse = shared(tmp_path_factory, name, make)
    return replace(warehouse, work=warehouse.path.parent / f"work-{worker()}")


def shared_landing(tmp_path_factory, name: str, make: Callable[[Path], T]) -> tuple[Path, T]:
    """A landing zone written once per session by ``make(landing)`` (read it; change a copy)."""
    return shared(
        tmp_path_factory, name, lambda folder: (folder / "landing", make(folder / "landing"))
    )


# --- landing zones ----------------------------------------------------------------------------------


def copy_landing(source: Path, target: Path) -> Path:
    """A private copy of a landing zone (``target`` must not exist)."""
    shutil.copytree(source, target)
    return target


def generated_month(landing: Path, resolution: str = "raw") -> dict:
    """The session's generated month: 4 nodes, 3 days at 10-minute steps, 2 clusters (its hourly
    landing zone with ``resolution="hourly"``)."""
    from gpucost.synth import MonthConfig, generate_month

    config = MonthConfig(
        seed=7, nodes=4, days=3, step_seconds=600, clusters=2, resolution=resolution
    )
    return generate_month(landing, config)


def small_month(landing: Path, *, slurm: bool = True) -> None:
    """One day of 2 nodes (and the shared-GPU node) in one cluster at 15-minute steps (seed 11);
    ``slurm=False`` leaves out the Slurm queue (its node-hours then stay plain FOCUS lines)."""
    from gpucost.synth import MonthConfig, generate_month

    config = MonthConfig(seed=11, nodes=2, days=1, step_seconds=900, clusters=1)
    generate_month(landing, config if slurm else replace(config, slurm_nodes=0))


def two_day_month(landing: Path) -> dict:
    """Two days of 2 nodes in one cluster at 15-minute steps (seed 3): the month the real telemetry
    files are landed beside (test_real_telemetry)."""
    from gpucost.synth import MonthConfig, generate_month

    return generate_month(
        landing, MonthConfig(seed=3, nodes=2, days=2, step_seconds=900, clusters=1)
    )


def small_month_landing(tmp_path_factory) -> Path:
    """The small month without the Slurm queue, written once per session (read it; change a copy)."""
    from functools import partial

    landing, _ = shared_landing(
        tmp_path_factory, "small_month_without_slurm", partial(small_month, slurm=False)
    )
    return landing


def small_month_warehouse(tmp_path_factory) -> Warehouse:
    """The small month without Slurm, built once per session: the FOCUS reference of the bill
    formats and the clean base of the bad-input cases."""
    landing = small_month_landing(tmp_path_factory)
    return shared_build(tmp_path_factory, "small_month_without_slurm_build", lambda _: landing)


def small_month_cases(tmp_path_factory) -> tuple[Warehouse, dict]:
    """The small month without Slurm with the cases of two suites landed in it, built once per
    session (one build instead of one per suite): its FOCUS bill rewritten in the 1.4 shape
    (test_focus14.land_focus_1_4) and its serving counters replaced by hand-written ones
    (test_inference_unit_cost.land_serving_counters). They cannot interact: the serving counters
    feed only the inference models and rpt_quarantine (source kind metrics/serving), the bill's
    shape only how its lines are read, and test_focus14 checks that fct_cost_allocation equals the
    1.0-shaped month's to the owner and component. Returns the warehouse and each case's facts."""
    from tests.python.test_focus14 import land_focus_1_4
    from tests.python.test_inference_unit_cost import land_serving_counters

    base = small_month_landing(tmp_path_factory)

    def make(folder: Path) -> tuple[Warehouse, dict]:
        landing = copy_landing(base, folder / "landing")
        cases = {
            "focus_1_4": land_focus_1_4(landing),
            "serving_counters": land_serving_counters(landing),
        }
        return build(landing, folder / "build"), cases

    warehouse, cases = shared(tmp_path_factory, "small_month_cases", make)
    return replace(warehouse, work=warehouse.path.parent / f"work-{worker()}"), cases


def native_cases_landing(landing: Path) -> Path:
    """The real native bill samples and test_native_bills' synthetic cases (its accounts), with
    test_commitment_term's three-month Savings Plan bill beside them (account 123456789012, billed
    nowhere else: deliveries are told apart by provider, account and period, and its unused
    commitment is shared among that account's owners only)."""
    from tests.python.test_commitment_term import land_commitment_term
    from tests.python.test_native_bills import land_native_cases

    land_native_cases(landing)
    land_commitment_term(landing)
    return landing


# the vars the native cases are built with (the Azure EA sample's CAD is then restated in USD)
NATIVE_CASES_VARS = ("--vars", "{gpucost_default_billing_currency: USD}")


def real_focus_landing(landing: Path) -> Path:
    """The real FOCUS 1.0 sample (1,000 lines) alone in billing/focus."""
    import pytest

    if not REAL_FOCUS.exists():
        pytest.fail(f"real FOCUS sample missing: {REAL_FOCUS} (the repo expects ../shared/data)")
    (landing / "billing" / "focus").mkdir(parents=True)
    shutil.copyfile(REAL_FOCUS, landing / "billing" / "focus" / REAL_FOCUS.name)
    return landing


# the vars the real FOCUS sample is built with: its tags name the project and team otherwise
REAL_FOCUS_VARS = (
    "--vars",
    "{gpucost_tag_key_project: application, gpucost_tag_key_team: business_unit}",
)


def native_landing(tmp_path: Path) -> Path:
    """The real native bill samples of ../shared/data/billing (AWS legacy CUR, Azure EA actual and
    amortised, OCI), each in its folder, and a GCP export line; no FOCUS file."""
    landing = tmp_path / "landing"
    for folder, names in {
        "aws_cur": ["aws_legacy_cur_sample_focus_converters.csv"],
        "azure": [
            "azure_ea_actual_sample_focus_converters.csv",
            "azure_ea_actualcost_small_finops_toolkit.csv",
            "azure_ea_amortizedcost_small_finops_toolkit.csv",
        ],
        "oci": ["oci_cost_report_sample_focus_converters.csv"],
    }.items():
        (landing / "billing" / folder).mkdir(parents=True)
        for name in names:
            shutil.copyfile(BILLING_SAMPLES / name, landing / "billing" / folder / name)
    (landing / "billing" / "gcp").mkdir()
    (landing / "billing" / "gcp" / "export.jsonl").write_text(
        json.dumps(
            {
                "billing_account_id": "01ABCD-234567-89EFGH",
                "cost": 1.25,
                "currency": "USD",
                "invoice": {"month": "202610"},
                "usage_start_time": "2026-10-01 00:00:00 UTC",
                "usage_end_time": "2026-10-01 01:00:00 UTC",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    return landing


def rendered_landing(month: Path, landing: Path, fmt: str) -> Path:
    """A copy of ``month`` whose FOCUS bill is rendered in the native format ``fmt``."""
    from gpucost.synth.bill_formats import render_bill

    copy_landing(month, landing)
    render_bill(landing, fmt)
    return landing
