"""Idempotency and faults: the same inputs give byte-identical marts, whatever happened before.

A mart's fingerprint is the md5 of its rows rendered as text and sorted, so it compares content,
not physical order.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.python.conftest import PROJECT_DIR, run_dbt

pytestmark = pytest.mark.warehouse


def fingerprints(warehouse: Path) -> dict[str, str]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = [
            name
            for (name,) in con.sql(
                "select table_name from information_schema.tables where table_schema = 'marts'"
                " order by 1"
            ).fetchall()
        ]
        return {
            table: con.sql(
                f"select md5(coalesce(string_agg(cast(t as varchar), chr(10) order by cast(t as varchar)), ''))"
                f" from marts.{table} as t"
            ).fetchall()[0][0]
            for table in tables
        }


def test_landing_every_file_twice_changes_no_mart(generated_warehouse, tmp_path):
    landing = tmp_path / "landing"
    shutil.copytree(generated_warehouse.landing, landing)
    for path in sorted(p for p in landing.rglob("*") if p.is_file() and "reference" not in p.parts):
        shutil.copyfile(path, path.with_name("again_" + path.name))
    result = run_dbt(landing, tmp_path / "twice.duckdb", tmp_path, "build")
    assert result.returncode == 0, result.stdout[-4000:]
    assert fingerprints(tmp_path / "twice.duckdb") == fingerprints(generated_warehouse.path)


def test_a_build_killed_midway_then_rerun_gives_identical_marts(generated_warehouse, tmp_path):
    warehouse = tmp_path / "killed.duckdb"
    env = os.environ | {
        "GPUCOST_LANDING_DIR": str(generated_warehouse.landing),
        "GPUCOST_WAREHOUSE": str(warehouse),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    log = tmp_path / "killed.log"
    with log.open("w") as handle:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("dbt")), "build", "--project-dir", str(PROJECT_DIR),
             "--profiles-dir", str(PROJECT_DIR), "--target-path", str(tmp_path / "target")],
            cwd=PROJECT_DIR, env=env, stdout=handle, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        # kill it once the Python allocation models have started: half the warehouse is written
        while "int_gpu_costs_prorated" not in log.read_text() and time.monotonic() < deadline:
            if process.poll() is not None:
                break
            time.sleep(0.2)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert "int_gpu_costs_prorated" in log.read_text(), log.read_text()[-3000:]
    assert "Completed successfully" not in log.read_text()
    result = run_dbt(generated_warehouse.landing, warehouse, tmp_path, "build")
    assert result.returncode == 0, result.stdout[-4000:]
    assert fingerprints(warehouse) == fingerprints(generated_warehouse.path)
