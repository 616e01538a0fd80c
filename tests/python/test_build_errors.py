"""What `gpucost build` and `gpucost benchmark` add to a failed dbt run: one line of advice when DuckDB
ran out of memory (gpucost.commands.project.out_of_memory_hint), read from dbt's run_results.json."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gpucost.commands import project
from gpucost.commands.project import out_of_memory_hint, run_results_path

OOM = (
    "Runtime Error in model base_dcgm__series (models/staging/dcgm/base/base_dcgm__series.sql)\n"
    "  Out of Memory Error: failed to allocate data of size 512.0 MiB (5.3 GiB/5.5 GiB used)"
)


def write_results(path: Path, *results: tuple[str, str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"unique_id": u, "status": s, "message": m} for u, s, m in results]
    path.write_text(json.dumps({"results": rows}), encoding="utf-8")
    return path


def test_the_hint_names_the_models_out_of_memory_and_the_settings_in_force(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUCOST_MEMORY_LIMIT", "6GB")
    monkeypatch.setenv("GPUCOST_THREADS", "2")
    results = write_results(
        tmp_path / "run_results.json",
        ("model.gpucost.base_serving__series", "error", OOM.replace("dcgm", "serving")),
        ("model.gpucost.base_dcgm__series", "error", OOM),
        ("model.gpucost.base_kube__series", "success", "OK"),
        ("test.gpucost.not_null_x.1a", "fail", "Got 3 results"),
        ("model.gpucost.int_x", "error", "Binder Error: column y not found"),
    )
    hint = out_of_memory_hint(results, since=time.time() - 60)
    assert hint is not None and "\n" not in hint
    assert hint.startswith(
        "DuckDB ran out of memory in base_dcgm__series, base_serving__series"
        " (GPUCOST_MEMORY_LIMIT 6GB, GPUCOST_THREADS 2 models at once)"
    )
    assert "GPUCOST_THREADS=1" in hint and "int_x" not in hint


def test_no_hint_for_other_failures_or_results_of_an_earlier_run(tmp_path):
    other = write_results(tmp_path / "a.json", ("model.gpucost.x", "error", "Binder Error: y"))
    assert out_of_memory_hint(other, since=time.time() - 60) is None
    earlier = write_results(tmp_path / "b.json", ("model.gpucost.x", "error", OOM))
    os.utime(earlier, (time.time() - 3600, time.time() - 3600))
    assert out_of_memory_hint(earlier, since=time.time() - 60) is None
    assert out_of_memory_hint(tmp_path / "missing.json", since=0) is None
    (tmp_path / "c.json").write_text('{"results": [', encoding="utf-8")
    assert out_of_memory_hint(tmp_path / "c.json", since=0) is None


def test_run_results_follow_the_target_path(tmp_path, monkeypatch):
    monkeypatch.delenv("DBT_TARGET_PATH", raising=False)
    assert run_results_path(tmp_path, ["build"]) == tmp_path / "target" / "run_results.json"
    assert run_results_path(tmp_path, ["build", "--target-path", "t1"]) == (
        tmp_path / "t1" / "run_results.json"
    )
    assert run_results_path(tmp_path, ["run", "--target-path=/x/t2"]) == Path(
        "/x/t2/run_results.json"
    )
    monkeypatch.setenv("DBT_TARGET_PATH", "t3")
    assert run_results_path(tmp_path, []) == tmp_path / "t3" / "run_results.json"


@pytest.mark.parametrize("message, hinted", [(OOM, True), ("Binder Error: y", False)])
def test_a_failed_build_prints_the_hint_on_stderr(tmp_path, monkeypatch, capsys, message, hinted):
    monkeypatch.delenv("DBT_TARGET_PATH", raising=False)

    def failing_dbt(command, cwd, env):
        write_results(Path(cwd) / "target" / "run_results.json", ("model.p.m", "error", message))
        return 1

    monkeypatch.setattr(project.subprocess, "call", failing_dbt)
    code = project.run_dbt(tmp_path, tmp_path / "landing", tmp_path / "w" / "w.duckdb", ["build"])
    err = capsys.readouterr().err
    assert code == 1
    assert ("gpucost: DuckDB ran out of memory in m (" in err) is hinted
