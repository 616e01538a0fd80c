"""Idempotency and faults: the same inputs give byte-identical marts, whatever happened before.

A mart's fingerprint is the md5 of its rows rendered as text and sorted, so it compares content,
not physical order.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from gpucost.commands.cli import dbt_executable
from tests.python.conftest import run_dbt
from tests.python.landing_zones import MODELS_ONLY, WAREHOUSE_NAME, dbt_invocation

pytestmark = pytest.mark.warehouse


# The attribution's model versions are a history (one row per training): an incremental sequence
# holds more rows than a full build; its current version (the last row) is compared instead.
VERSIONS = "int_attribution_model_versions"


def current_version(warehouse: Path) -> tuple:
    """The warehouse's current model version (without its sequence number and why it was trained,
    which depend on what was built before)."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        (current,) = con.sql(
            f"select * exclude (version_sequence, retrain_reason) from intermediate.{VERSIONS}"
            " order by version_sequence desc limit 1"
        ).fetchall()
    return current


def fingerprints(
    warehouse: Path,
    schema: str = "marts",
    landing: Path | None = None,
    only: tuple[str, ...] | None = None,
) -> dict[str, str]:
    """Each table's fingerprint (``only`` these, if given); with ``landing``, the landed files' paths
    count relative to it (the bill lines keep the file and delivery folder they were read from: two
    copies of one landing zone hold the same lines under other paths)."""
    row = "cast(t as varchar)"
    if landing is not None:
        prefix = f"{landing}/".replace("'", "''")
        row = f"replace({row}, '{prefix}', '')"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [
            name
            for (name,) in con.sql(
                "select table_name from information_schema.tables"
                f" where table_schema = '{schema}' and table_type = 'BASE TABLE' order by 1"
            ).fetchall()
            if name != VERSIONS and (only is None or name in only)
        ]
        return {
            table: con.sql(
                f"select md5(coalesce(string_agg({row}, chr(10) order by {row}), ''))"
                f" from {comparable(con, schema, table)} as t"
            ).fetchall()[0][0]
            for table in tables
        }


# When a row's inputs were loaded (the telemetry tables computed by time: int_telemetry_sample_intervals,
# int_gpu_usage_hourly, stg_serving__counter_increases): bookkeeping, which an incremental and a fresh
# build of the same files cannot share.
BOOKKEEPING = "inputs_loaded_at"


def comparable(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> str:
    """The table, without its bookkeeping column if it has one."""
    (has_bookkeeping,) = con.execute(
        "select count(*) > 0 from information_schema.columns"
        " where table_schema = ? and table_name = ? and column_name = ?",
        [schema, table, BOOKKEEPING],
    ).fetchall()[0]
    if has_bookkeeping:
        return f"(select * exclude ({BOOKKEEPING}) from {schema}.{table})"
    return f"{schema}.{table}"


def test_every_file_landed_twice_and_a_build_killed_midway_change_no_mart(
    generated_warehouse, tmp_path
):
    """Two faults, one warehouse (one build fewer than a test each, about 50 s of CPU): every file of
    the session's month landed twice, and the first build of it killed once the Python allocation
    models have started (half the warehouse written). The rerun's marts equal the session's build of
    the month landed once, but for the two listings of the copies."""
    landing = tmp_path / "landing"
    shutil.copytree(generated_warehouse.landing, landing)
    for path in sorted(p for p in landing.rglob("*") if p.is_file() and "reference" not in p.parts):
        shutil.copyfile(path, path.with_name("again_" + path.name))
    warehouse = tmp_path / "twice" / WAREHOUSE_NAME

    # the dbt command run_dbt would run in this process, started as a process of its own to be killed
    killed = dbt_invocation(landing, warehouse, tmp_path, "build")
    log = tmp_path / "killed.log"
    with log.open("w") as handle:
        process = subprocess.Popen(
            [dbt_executable(), *killed.args], cwd=killed.cwd, env=killed.env, stdout=handle,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while "int_gpu_costs_prorated" not in log.read_text() and time.monotonic() < deadline:
            if process.poll() is not None:
                break
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert "int_gpu_costs_prorated" in log.read_text(), log.read_text()[-3000:]
    assert "Completed successfully" not in log.read_text()

    # the rerun runs the data tests too: the copies reconcile to the bill, counted once
    result = run_dbt(landing, warehouse, tmp_path, "build")
    assert result.returncode == 0, result.stdout[-4000:]
    twice, once = fingerprints(warehouse), fingerprints(generated_warehouse.path)
    # the copies of the bill rows are counted once and listed as duplicates: rpt_quarantine gains one
    # duplicate_of row per copied line, rpt_reconciliation counts them; every other mart is unchanged
    for listing in ("rpt_quarantine", "rpt_reconciliation"):
        twice.pop(listing), once.pop(listing)
    assert twice == once
    with duckdb.connect(str(warehouse), read_only=True) as con:
        con.execute(f"attach '{generated_warehouse.path}' as once (read_only)")
        columns = "* exclude (duplicate_line_count, duplicated_billed_cost)"
        for left, right in (("marts", "once.marts"), ("once.marts", "marts")):
            assert con.sql(
                f"select count(*) from (select {columns} from {left}.rpt_reconciliation"
                f" except select {columns} from {right}.rpt_reconciliation)"
            ).fetchall() == [(0,)]
        ((duplicates, billed_lines, other_new),) = con.sql(
            "select (select sum(duplicate_line_count) from marts.rpt_reconciliation),"
            " (select sum(bill_line_count) from marts.rpt_reconciliation where provider_name <> 'On-prem'),"
            " (select count(*) from (select * exclude (quarantine_id) from marts.rpt_quarantine"
            "  where quarantine_reason not like 'duplicate_of: %'"
            "  except select * exclude (quarantine_id) from once.marts.rpt_quarantine))"
        ).fetchall()
    assert duplicates == billed_lines and other_new == 0


# a 6-hour lookback so the run really is partial; the attribution retrains whenever a later workload
# arrived (schedule of 0 days: the default, 7, keeps the version trained without day 3 and scores
# day 3's workloads with it, which a full refresh would not; int_attribution_model_versions); and
# int_gpu_usage_hourly built a few hours at a time (20,000 DCGM samples a chunk: the session's full
# build is one chunk, so chunked builds are compared with one pass over every hour)
INCREMENTAL = (
    "gpucost_lookback_hours: 6, gpucost_attribution_retrain_days: 0,"
    " gpucost_usage_samples_per_chunk: 20000"
)
LOOKBACK = ("--vars", "{" + INCREMENTAL + "}")
RETRAIN = ("--vars", "{" + INCREMENTAL + ", gpucost_attribution_retrain: true}")
# the plan (pre-hook) and each chunk after the first (post-hook), as the build logs them
CHUNKS = re.compile(r"int_gpu_usage_hourly: [\d,]+ DCGM samples in (\d+) chunks of (\d+) h")
CHUNK = re.compile(r"int_gpu_usage_hourly: chunk (\d+) of (\d+) \(hours from ")


@dataclass
class LateTelemetry:
    """The generated month built incrementally: without its last day's telemetry, then with it."""

    landing: Path
    warehouse: Path
    first_stdout: str
    second_stdout: str
    first_loaded: dict[str, dict[str, str]]  # kind -> file -> loaded_at, after the first build
    late_files: set[str]  # the telemetry files that landed late


def loaded(warehouse: Path, landing: Path, kind: str, tombstones: bool = False) -> dict[str, str]:
    """Each telemetry file of ``kind`` (dcgm, kube) the staging tables hold: when it was read."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.sql(
            f"select source_file, min(loaded_at), max(loaded_at) from staging.base_{kind}__series"
            f" where (source_file_size is null) = {tombstones} group by 1"
        ).fetchall()
    assert all(first == last for _, first, last in rows)
    return {Path(file).relative_to(landing).as_posix(): str(first) for file, first, _ in rows}


@pytest.fixture(scope="module")
def late_telemetry(generated_warehouse, tmp_path_factory) -> LateTelemetry:
    """Day 3's telemetry arrives late: build without it, land it, build again (incremental, with a
    6-hour lookback so the run really is partial). Shared by the two tests below (one incremental
    sequence, not two): the first only reads the warehouse; the second changes the landing zone in
    place afterwards (the staging tables know each file by its path, so a copy would be new files)."""
    root = tmp_path_factory.mktemp("late_telemetry")
    landing = root / "landing"
    shutil.copytree(generated_warehouse.landing, landing)
    days = sorted({p.name for p in (landing / "metrics").glob("*/*/*") if p.is_dir()})
    late = root / "late"
    late_files = set()
    for folder in sorted((landing / "metrics").glob(f"*/*/{days[-1]}")):
        late_files |= {f.relative_to(landing).as_posix() for f in folder.rglob("*") if f.is_file()}
        shutil.move(folder, late / folder.relative_to(landing))
    warehouse = root / "incremental" / WAREHOUSE_NAME
    # the tables of both builds are compared with the session's full build (MODELS_ONLY)
    first = run_dbt(landing, warehouse, root, "build", *LOOKBACK, *MODELS_ONLY)
    assert first.returncode == 0, first.stdout[-4000:]
    first_loaded = {kind: loaded(warehouse, landing, kind) for kind in ("dcgm", "kube")}
    for folder in sorted((late / "metrics").glob(f"*/*/{days[-1]}")):
        shutil.move(folder, landing / folder.relative_to(late))
    second = run_dbt(landing, warehouse, root, "build", *LOOKBACK, *MODELS_ONLY)
    assert second.returncode == 0, second.stdout[-4000:]
    return LateTelemetry(landing, warehouse, first.stdout, second.stdout, first_loaded, late_files)


def test_an_incremental_run_with_late_telemetry_equals_a_full_refresh(
    late_telemetry, generated_warehouse
):
    # the incremental build of late_telemetry against the full build of everything
    assert "incremental model intermediate.int_gpu_usage_hourly" in late_telemetry.second_stdout
    # both builds made int_gpu_usage_hourly in several chunks of hours, each chunk after the first
    # logged by the post-hook that inserted it (the second build's from its cutoff on: fewer hours)
    plans = []
    for stdout in (late_telemetry.first_stdout, late_telemetry.second_stdout):
        ((chunks, hours),) = CHUNKS.findall(stdout)
        assert int(chunks) > 1
        assert CHUNK.findall(stdout) == [(str(n), chunks) for n in range(2, int(chunks) + 1)]
        plans.append(int(chunks) * int(hours))
    assert plans[1] < plans[0]
    # the incremental sequence trained twice (without day 3, then with it, on schedule only: day 3's
    # metrics brought new workloads, some of them started before the first version's horizon, and no
    # label of a workload it read changed), the full build once: the current version is the same
    # training, under the same id
    assert current_version(late_telemetry.warehouse) == current_version(generated_warehouse.path)
    with duckdb.connect(str(late_telemetry.warehouse), read_only=True) as con:
        ((reasons,),) = con.sql(
            "select list(retrain_reason order by version_sequence)"
            " from intermediate.int_attribution_model_versions"
        ).fetchall()
    assert reasons == ["first", "schedule"]
    for schema in ("intermediate", "marts"):
        assert fingerprints(
            late_telemetry.warehouse, schema, late_telemetry.landing
        ) == fingerprints(generated_warehouse.path, schema, generated_warehouse.landing)
    # and the staging table computed by time (the landed files themselves are not, by their paths)
    by_time = ("stg_serving__counter_increases",)
    incremental = fingerprints(late_telemetry.warehouse, "staging", only=by_time)
    assert set(incremental) == set(by_time)
    assert incremental == fingerprints(generated_warehouse.path, "staging", only=by_time)


KEPT = re.compile(r"^(int_\w+): ([\d,]+) of ([\d,]+) lines kept, ([\d,]+) computed", re.M)


def restate_a_day(landing: Path) -> int:
    """Land a restatement of the generated FOCUS month (a later delivery, by the time in its path) in
    which the GPU instance lines of the month's second day cost 0.01 more; returns how many lines."""
    export = next((landing / "billing" / "focus").glob("*/focus_export_*.csv"))
    with export.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header, rows = reader.fieldnames, list(reader)
    second_day = sorted({row["ChargePeriodStart"][:10] for row in rows})[1]
    restated = 0
    for row in rows:
        if row["ChargePeriodStart"].startswith(second_day) and row["ResourceType"] == "instance":
            for column in ("BilledCost", "EffectiveCost"):
                row[column] = str(Decimal(row[column]) + Decimal("0.01"))
            restated += 1
    target = export.parent / "restated" / "20991231T000000Z" / export.name
    target.parent.mkdir(parents=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return restated


def test_a_restated_bill_day_recomputes_only_its_lines_and_equals_a_fresh_build(
    late_telemetry, tmp_path
):
    """The month built incrementally (late_telemetry), then a restated bill day landed: the
    allocation models built by line (gpucost.engines.reuse) recompute that day's GPU lines and keep
    the rest, and every intermediate table and mart equals a fresh build of the same landing."""
    landing = tmp_path / "landing"
    shutil.copytree(late_telemetry.landing, landing)
    warehouse = tmp_path / "incremental" / WAREHOUSE_NAME
    warehouse.parent.mkdir()
    shutil.copyfile(late_telemetry.warehouse, warehouse)
    restated = restate_a_day(landing)
    assert restated > 0

    # labels and features unchanged: the current model version is kept, and a fresh build trains it
    build = run_dbt(landing, warehouse, tmp_path, "build", *LOOKBACK)
    assert build.returncode == 0, build.stdout[-4000:]
    kept = {
        m[1]: [int(n.replace(",", "")) for n in m.groups()[1:]] for m in KEPT.finditer(build.stdout)
    }
    assert set(kept) == {
        "int_gpu_costs_prorated", "int_node_compute_costs_prorated", "int_gpu_idle_costs_spread"
    }  # fmt: skip
    # the restated lines are new lines (another row identity); every other line is kept
    assert kept["int_gpu_costs_prorated"][2] == restated
    assert kept["int_gpu_costs_prorated"][0] == kept["int_gpu_costs_prorated"][1] - restated
    for model, (_, lines, computed) in kept.items():
        assert 0 < computed < lines, model

    fresh = tmp_path / "fresh" / WAREHOUSE_NAME
    assert run_dbt(landing, fresh, tmp_path, "build", *MODELS_ONLY).returncode == 0
    assert current_version(warehouse) == current_version(fresh)
    for schema in ("intermediate", "marts"):
        assert fingerprints(warehouse, schema, landing) == fingerprints(fresh, schema, landing)


FOCUS = "rpt_focus_allocated_charges"


def _charge_rows(warehouse: Path, charge: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(
            f'select * from marts.{FOCUS} where "x_OriginChargeId" = ? order by "x_AllocationId"',
            [charge],
        ).fetchall()


def test_the_focus_mart_writes_again_only_the_charges_whose_digest_changed(
    late_telemetry, generated_warehouse, tmp_path
):
    """rpt_focus_allocated_charges is built by origin charge: a charge whose stored digest differs
    from its inputs' is written again whole, a row of a charge no longer allocated is deleted, a
    charge whose digest matches is kept as it is; and a table from before the digests (no
    input_key / input_fingerprint) is written again whole, equal to the full build."""
    warehouse = tmp_path / "w" / WAREHOUSE_NAME
    warehouse.parent.mkdir()
    shutil.copyfile(late_telemetry.warehouse, warehouse)
    table = f"marts.{FOCUS}"
    with duckdb.connect(str(warehouse)) as con:
        ((changed,), (kept,)) = con.sql(
            f'select "x_OriginChargeId" from {table} group by 1 order by count(*) desc, 1 limit 2'
        ).fetchall()
        # a charge tampered with and its digest with it; a stale row of no allocated charge
        con.execute(
            f'update {table} set "BilledCost" = "BilledCost" + 1, input_fingerprint = \'stale\''
            ' where "x_OriginChargeId" = ?',
            [changed],
        )
        con.execute(
            f"insert into {table} by name select * replace ('gone' as input_key)"
            f' from {table} where "x_OriginChargeId" = ? limit 1',
            [changed],
        )
        # a charge tampered with but not its digest: the build keeps it (the digest is its word)
        descriptions = con.execute(
            f'select "x_AllocationId", "ChargeDescription" from {table} where "x_OriginChargeId" = ?',
            [kept],
        ).fetchall()
        con.execute(
            f'update {table} set "ChargeDescription" = \'kept\' where "x_OriginChargeId" = ?',
            [kept],
        )
    build = run_dbt(late_telemetry.landing, warehouse, tmp_path, "build", "-s", FOCUS, *LOOKBACK)
    assert build.returncode == 0, build.stdout[-4000:]
    assert _charge_rows(warehouse, changed) == _charge_rows(generated_warehouse.path, changed)
    with duckdb.connect(str(warehouse)) as con:
        assert con.sql(f"select count(*) from {table} where input_key = 'gone'").fetchall() == [
            (0,)
        ]
        assert con.execute(
            f"select bool_and(\"ChargeDescription\" = 'kept') from {table}"
            ' where "x_OriginChargeId" = ?',
            [kept],
        ).fetchall() == [(True,)]
        con.executemany(
            f'update {table} set "ChargeDescription" = ? where "x_AllocationId" = ?',
            [[description, allocation] for allocation, description in descriptions],
        )
        # the version before the digests: the same rows without the two columns
        con.execute(f"alter table {table} drop column input_fingerprint")
        con.execute(f"alter table {table} drop column input_key")
    build = run_dbt(late_telemetry.landing, warehouse, tmp_path, "build", "-s", FOCUS, *LOOKBACK)
    assert build.returncode == 0, build.stdout[-4000:]
    assert fingerprints(warehouse, "marts", only=(FOCUS,)) == fingerprints(
        generated_warehouse.path, "marts", only=(FOCUS,)
    )


def test_telemetry_files_re_delivered_or_removed_reload_only_themselves(
    late_telemetry, generated_warehouse, tmp_path
):
    # the staging tables read each landed file once: a second build reads nothing again (only the late
    # files); a file re-delivered with other values (day 1, far outside a 6-hour lookback) is read again
    # and its hours are recomputed; files that disappear (a whole cluster-day of DCGM) leave only a
    # tombstone row and their hours are recomputed too. The result equals a fresh build of what is
    # landed then.
    landing = late_telemetry.landing
    warehouse = tmp_path / "incremental" / WAREHOUSE_NAME
    warehouse.parent.mkdir()
    shutil.copyfile(late_telemetry.warehouse, warehouse)
    first_dcgm, first_kube = loaded(warehouse, landing, "dcgm"), loaded(warehouse, landing, "kube")
    for kind, files in (("dcgm", first_dcgm), ("kube", first_kube)):
        before = late_telemetry.first_loaded[kind]
        assert before and {file: files[file] for file in before} == before
        assert set(files) - set(before) == {
            file for file in late_telemetry.late_files if file.startswith(f"metrics/{kind}/")
        }

    clusters = sorted(p for p in (landing / "metrics" / "dcgm").iterdir() if p.is_dir())
    assert len(clusters) >= 2
    day_one = sorted(p for p in clusters[0].iterdir() if p.is_dir())[0]
    redelivered = day_one / "DCGM_FI_DEV_GPU_UTIL.json"
    text = redelivered.read_text()
    changed_text = re.sub(r'"([0-9]+)"\]', lambda m: f'"{(int(m[1]) + 37) % 100}"]', text)
    assert changed_text != text
    redelivered.write_text(changed_text)
    removed_day = sorted(p for p in clusters[1].iterdir() if p.is_dir())[0]
    removed = {p.relative_to(landing).as_posix() for p in removed_day.glob("*.json")}
    shutil.rmtree(removed_day)
    removed_kube = next((landing / "metrics" / "kube").glob("*/*/kube_node_status_capacity.json"))
    removed_kube.unlink()

    # features changed, labels did not: the version is kept unless retraining is asked (a fresh
    # build trains on the new features); asked, the incremental build equals the fresh one
    second = run_dbt(landing, warehouse, tmp_path, "build", *RETRAIN)
    assert second.returncode == 0, second.stdout[-4000:]
    after_dcgm, after_kube = loaded(warehouse, landing, "dcgm"), loaded(warehouse, landing, "kube")
    changed = {file for file in after_dcgm if after_dcgm[file] != first_dcgm.get(file)}
    assert changed == {redelivered.relative_to(landing).as_posix()}
    assert set(first_dcgm) - set(after_dcgm) == removed
    assert set(loaded(warehouse, landing, "dcgm", tombstones=True)) == removed
    assert set(first_kube) - set(after_kube) == {removed_kube.relative_to(landing).as_posix()}
    assert after_kube == {file: first_kube[file] for file in after_kube}

    fresh = tmp_path / "fresh" / WAREHOUSE_NAME
    # the incremental build above ran the data tests; the fresh one's tables must equal its tables
    assert run_dbt(landing, fresh, tmp_path, "build", *MODELS_ONLY).returncode == 0
    assert current_version(warehouse) == current_version(fresh)
    assert fingerprints(warehouse, "intermediate") == fingerprints(fresh, "intermediate")
    assert fingerprints(warehouse) == fingerprints(fresh)
    assert fingerprints(fresh) != fingerprints(generated_warehouse.path)


def second_scraper(
    day_folder: Path, name: str, *, shift: int = 0, model: str | None = None
) -> Path:
    """A second DCGM file in ``day_folder``: the first GPU_UTIL series of the day's file again, its samples
    ``shift`` seconds later (a second scraper at the same interval) or its modelName label changed; returns it."""
    source = json.loads((day_folder / "DCGM_FI_DEV_GPU_UTIL.json").read_text())
    series = source["data"]["result"][0]
    series["values"] = [[ts + shift, value] for ts, value in series["values"]]
    if model is not None:
        series["metric"]["modelName"] = model
    source["data"]["result"] = [series]
    target = day_folder / name
    target.write_text(json.dumps(source))
    return target


def slot_steps(warehouse: Path) -> dict[tuple[str, str | None], set[int | None]]:
    """Each GPU slot (uuid, MIG instance) of the intervals table: the steps its rows carry."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.sql(
            "select gpu_uuid, gpu_instance_id, list(distinct step_seconds)"
            " from intermediate.int_telemetry_sample_intervals where series_kind = 'gpu_slot' group by 1, 2"
        ).fetchall()
    return {(uuid, instance): set(steps) for uuid, instance, steps in rows}


def test_sample_intervals_take_what_staging_loaded_and_sample_tests_recheck_until_they_pass(
    generated_warehouse, tmp_path
):
    """int_telemetry_sample_intervals recomputes from the files the staging tables loaded since its rows were
    computed, in this invocation or an earlier one: day 3 lands with a second scraper of one GPU on day 2 (its
    samples halfway between the others: the slot's step halves), staging alone loads them, then the build. The
    slot's earlier rows take the shorter step, the rest of day 1 is kept, and every table equals a fresh build.
    The per-sample key tests read only the files not consumed yet: a file that repeats a GPU's samples under
    another modelName fails the next build, and the build after it too, until it is gone."""
    landing = tmp_path / "landing"
    shutil.copytree(generated_warehouse.landing, landing)
    days = sorted({p.name for p in (landing / "metrics").glob("*/*/*") if p.is_dir()})
    late = tmp_path / "late"
    for folder in sorted((landing / "metrics").glob(f"*/*/{days[-1]}")):
        shutil.move(folder, late / folder.relative_to(landing))
    warehouse = tmp_path / "incremental" / WAREHOUSE_NAME
    first = run_dbt(landing, warehouse, tmp_path, "build", *LOOKBACK, *MODELS_ONLY)
    assert first.returncode == 0, first.stdout[-4000:]
    before = slot_steps(warehouse)

    for folder in sorted((late / "metrics").glob(f"*/*/{days[-1]}")):
        shutil.move(folder, landing / folder.relative_to(late))
    cluster = sorted((landing / "metrics" / "dcgm").iterdir())[0]
    extra = second_scraper(cluster / days[1], "DCGM_FI_DEV_GPU_UTIL_second_scraper.json", shift=300)
    labels = json.loads(extra.read_text())["data"]["result"][0]["metric"]
    slot = (labels["UUID"], labels.get("GPU_I_ID"))
    assert before[slot] == {600}
    staging = run_dbt(
        landing,
        warehouse,
        tmp_path,
        "run",
        "--select",
        "base_dcgm__series",
        "base_kube__series",
        *LOOKBACK,
    )
    assert staging.returncode == 0, staging.stdout[-4000:]
    second = run_dbt(landing, warehouse, tmp_path, "build", *LOOKBACK)
    assert second.returncode == 0, second.stdout[-4000:]
    after = slot_steps(warehouse)
    assert after.pop(slot) == {300}
    assert {key: after[key] for key in before if key != slot} == {
        key: steps for key, steps in before.items() if key != slot
    }
    with duckdb.connect(str(warehouse), read_only=True) as con:
        ((loads, kept_day_one),) = con.sql(
            "select count(distinct inputs_loaded_at), count(*) filter (where inputs_loaded_at"
            " < (select max(inputs_loaded_at) from intermediate.int_telemetry_sample_intervals)"
            " and series_kind = 'gpu_slot')"
            " from intermediate.int_telemetry_sample_intervals"
        ).fetchall()
    assert loads == 2 and kept_day_one > 0

    fresh = tmp_path / "fresh" / WAREHOUSE_NAME
    assert run_dbt(landing, fresh, tmp_path, "build", *MODELS_ONLY).returncode == 0
    assert current_version(warehouse) == current_version(fresh)
    for schema in ("intermediate", "marts"):
        assert fingerprints(warehouse, schema) == fingerprints(fresh, schema)

    intervals_key_test_checks_what_the_usage_has_not_read(landing, warehouse, tmp_path)

    # the same GPU's day-3 samples again under another modelName: two rows per GPU slot and time
    second_scraper(
        cluster / days[2], "DCGM_FI_DEV_GPU_UTIL_relabelled.json", model="NVIDIA H100 PCIe"
    )
    failing = "gpucost_unique_combination_of_columns_stg_dcgm__gpu_samples"
    for _ in range(2):
        build = run_dbt(landing, warehouse, tmp_path, "build", *LOOKBACK)
        assert build.returncode != 0
        assert re.search(rf"FAIL \d+ {failing}", build.stdout), build.stdout[-4000:]


def intervals_key_test_checks_what_the_usage_has_not_read(
    landing: Path, warehouse: Path, work: Path
) -> None:
    """int_telemetry_sample_intervals' key test looks for the keys of the rows int_gpu_usage_hourly has
    not read yet (inputs_loaded_at after the usage's newest) among every row: a row repeating a kept
    row's key fails it when it is new, passes it once the usage has read past it (checked when it came),
    and fails it again under gpucost_test_every_sample. The warehouse is left as it was."""
    table = "intermediate.int_telemetry_sample_intervals"
    failing = r"FAIL \d+ gpucost_unique_combination_of_columns_int_telemetry_sample_intervals"
    with duckdb.connect(str(warehouse)) as con:
        ((read_through,),) = con.sql(
            "select max(inputs_loaded_at) from intermediate.int_gpu_usage_hourly"
        ).fetchall()
        con.execute(
            f"insert into {table} select * replace (? as inputs_loaded_at) from {table}"
            " where series_kind = 'gpu_slot' order by gpu_slot_id, sampled_epoch limit 1",
            [read_through + timedelta(hours=1)],
        )
    select = ("--select", "int_telemetry_sample_intervals")
    new = run_dbt(landing, warehouse, work, "test", *select)
    assert new.returncode != 0 and re.search(failing, new.stdout), new.stdout[-4000:]
    with duckdb.connect(str(warehouse)) as con:
        con.execute(
            f"update {table} set inputs_loaded_at = ? where inputs_loaded_at > ?",
            [read_through - timedelta(hours=1), read_through],
        )
    read = run_dbt(landing, warehouse, work, "test", *select)
    assert read.returncode == 0, read.stdout[-4000:]
    every = run_dbt(
        landing, warehouse, work, "test", *select, "--vars", "{gpucost_test_every_sample: true}"
    )
    assert every.returncode != 0 and re.search(failing, every.stdout), every.stdout[-4000:]
    with duckdb.connect(str(warehouse)) as con:
        con.execute(
            f"delete from {table} where inputs_loaded_at = ?", [read_through - timedelta(hours=1)]
        )
