"""Smoke test of ``gpucost benchmark`` on a tiny tier: it runs, and its CSV is consistent.

Not a timed test: no assertion on how fast anything is, only that times are measured (positive)
and that the ratios are the ones the columns imply."""

from __future__ import annotations

import csv
import math
import shutil

import pytest

from gpucost.commands import benchmark
from gpucost.commands.cli import main


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("benchmark")
    out, scratch = root / "out", root / "scratch"
    arguments = ["benchmark", "--tiers", "2", "--days", "2", "--steps", "900"]
    with pytest.MonkeyPatch.context() as patch:
        # dbt's own variable for --exclude-resource-type (values split on spaces), read by the
        # benchmark's dbt commands: this test checks the command and its CSV, not the tiny month's
        # money, which the session's other builds test (the unit tests run on the generated
        # warehouse; the data tests on every landing zone's build)
        patch.setenv("DBT_EXCLUDE_RESOURCE_TYPES", "unit_test test")
        # dbt runs two models at once, DuckDB each query on one thread: the two settings differ
        patch.setenv("GPUCOST_THREADS", "2")
        patch.setenv("GPUCOST_DUCKDB_THREADS", "1")
        code = main([*arguments, "--out", str(out), "--scratch", str(scratch)])
    with (out / "benchmark.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        return code, reader.fieldnames, list(reader), out, scratch


def test_benchmark_exits_zero_and_writes_csv_and_plot(tiny_run):
    code, fieldnames, rows, out, scratch = tiny_run
    assert code == 0
    assert fieldnames == benchmark.CSV_COLUMNS
    assert len(rows) == 1
    assert (out / "benchmark.png").is_file() or (out / "benchmark.svg").is_file()
    # Without --keep the tier's landing zone and warehouse are deleted.
    assert not any(scratch.iterdir())


def test_benchmark_row_measures(tiny_run):
    _, _, rows, _, _ = tiny_run
    row = rows[0]
    assert (row["nodes"], row["days"], row["step_seconds"]) == ("2", "2", "900")
    assert row["resolution"] == "raw"
    for column in ("generate_s", "floor_s", "full_build_s", "incremental_s"):
        assert float(row[column]) > 0, column
    for column in ("full_peak_rss_mb", "incremental_peak_rss_mb"):
        # dbt + DuckDB in one Python process: tens of MB at the very least.
        assert float(row[column]) > 20, column
    assert float(row["landing_mb"]) > 0 and float(row["heldback_mb"]) > 0
    # The floor scanned only the landed day; the held-back day came in for the incremental build.
    assert 0 < int(row["dcgm_samples"]) < int(row["dcgm_samples_total"])
    assert int(row["dcgm_samples_total"]) % 4 == 0  # 4 DCGM metrics per GPU-step
    assert int(row["floor_node_hours"]) > 0
    # the floor reads on the threads dbt's DuckDB connection runs each query on
    # (GPUCOST_DUCKDB_THREADS), not on the profile's threads (how many models dbt runs at once)
    assert (row["threads"], row["duckdb_threads"]) == ("2", "1")
    assert 0 < int(row["hourly_rows_full"]) < int(row["hourly_rows_incremental"])
    assert int(row["nproc"]) >= 1 and row["duckdb"] and row["dbt_core"] and row["cpu_model"]


def test_benchmark_ratios_follow_from_the_columns(tiny_run):
    _, _, rows, _, _ = tiny_run
    row = rows[0]
    assert math.isclose(
        float(row["build_over_floor"]),
        float(row["full_build_s"]) / float(row["floor_s"]),
        rel_tol=1e-4,
    )
    assert math.isclose(
        float(row["incremental_over_full"]),
        float(row["incremental_s"]) / float(row["full_build_s"]),
        rel_tol=1e-4,
    )
    # A single tier has no previous tier to grow from.
    assert row["growth_data_ratio"] == row["growth_time_ratio"] == ""


def test_growth_ratios_compare_tiers_at_the_same_step():
    def row(nodes, step, samples, full):
        return {
            "nodes": nodes,
            "step_seconds": step,
            "dcgm_samples": samples,
            "floor_s": 1.0,
            "full_build_s": full,
            "incremental_s": full / 10,
        }

    rows = [row(128, 60, 8000, 44.0), row(16, 60, 1000, 4.0), row(16, 15, 4000, 8.0)]
    benchmark.add_ratios(rows)
    big, small, fine = rows
    assert small["growth_data_ratio"] is None and fine["growth_data_ratio"] is None
    assert big["growth_data_ratio"] == 8.0
    assert big["growth_time_ratio"] == 11.0
    assert big["growth_time_over_data"] == 11.0 / 8.0
    assert big["build_over_floor"] == 44.0 and big["incremental_over_full"] == pytest.approx(0.1)


def test_hold_back_moves_only_the_last_days_metrics(tmp_path):
    landing, held = tmp_path / "landing", tmp_path / "held"
    for kind in ("dcgm", "kube"):
        for date in ("2026-10-01", "2026-10-02"):
            folder = landing / "metrics" / kind / "c1" / date
            folder.mkdir(parents=True)
            (folder / "m.json").write_text("{}")
    (landing / "billing").mkdir()
    moved = benchmark.hold_back_last_day(landing, held, "2026-10-01", 2)
    assert sorted(p.relative_to(held).as_posix() for p in moved) == [
        "metrics/dcgm/c1/2026-10-02",
        "metrics/kube/c1/2026-10-02",
    ]
    assert sorted(p.name for p in landing.glob("metrics/*/c1/*")) == ["2026-10-01", "2026-10-01"]
    benchmark.land_held_back(landing, held)
    assert len(list(landing.glob("metrics/*/c1/*/m.json"))) == 4
    assert not list(held.glob("metrics/*/*/*"))


def test_a_landing_given_is_linked_and_holding_back_leaves_it_whole(tmp_path):
    source, landing, held = tmp_path / "source", tmp_path / "landing", tmp_path / "held"
    for date in ("2026-10-01", "2026-10-02"):
        folder = source / "metrics" / "dcgm" / "c1" / date
        folder.mkdir(parents=True)
        (folder / "m.json").write_text(date)
    shutil.copytree(source, landing, copy_function=benchmark.link_or_copy)
    files = sorted(source.rglob("m.json"))
    assert [f.stat().st_ino for f in files] == [
        (landing / f.relative_to(source)).stat().st_ino for f in files
    ]
    benchmark.hold_back_last_day(landing, held, "2026-10-01", 2)
    assert sorted(p.parent.name for p in landing.rglob("m.json")) == ["2026-10-01"]
    assert [f.read_text() for f in sorted(source.rglob("m.json"))] == ["2026-10-01", "2026-10-02"]


def test_benchmark_rejects_a_single_day(capsys):
    assert main(["benchmark", "--tiers", "2", "--days", "1"]) == 2
    assert "--days must be >= 2" in capsys.readouterr().err


def test_a_failed_build_exits_one_and_keeps_the_scratch(tmp_path, monkeypatch, capsys):
    calls = []

    def failing_build(project_dir, landing, warehouse, work, log):
        calls.append(log.name)
        log.write_text("simulated dbt failure\n")
        return 2, 0.1, 12.0

    monkeypatch.setattr(benchmark, "run_dbt_build", failing_build)
    scratch = tmp_path / "scratch"
    args = ["benchmark", "--tiers", "2", "--days", "2", "--steps", "900"]
    code = main([*args, "--out", str(tmp_path / "out"), "--scratch", str(scratch)])
    assert code == 1
    assert calls == ["full_build.log"]
    # how long the failed build ran and its peak memory: a memory target reads a failed build too
    assert "dbt build failed (exit 2) after 0.1s, peak RSS 12 MB; see" in capsys.readouterr().err
    # The failed tier's landing zone and log are left for inspection; no CSV for zero tiers.
    assert (scratch / "n2_s900_d2" / "full_build.log").is_file()
    assert (scratch / "n2_s900_d2" / "landing" / "metrics").is_dir()
    assert not (tmp_path / "out" / "benchmark.csv").exists()


def test_growth_compares_tiers_of_the_same_resolution_only():
    def row(nodes, resolution, samples, full):
        return {
            "nodes": nodes, "days": 30, "step_seconds": 60, "resolution": resolution,
            "landing_mb": 1.0, "dcgm_samples": samples, "generate_s": 1.0, "floor_s": 1.0,
            "full_build_s": full, "incremental_s": full / 10, "full_peak_rss_mb": 100.0,
            "incremental_peak_rss_mb": 100.0,
        }  # fmt: skip

    rows = [
        row(16, "raw", 1000, 4.0),
        row(128, "hourly", 160, 6.0),
        row(1000, "hourly", 1280, 30.0),
    ]
    benchmark.add_ratios(rows)
    raw, hourly_small, hourly_big = rows
    assert raw["growth_data_ratio"] is None and hourly_small["growth_data_ratio"] is None
    assert hourly_big["growth_data_ratio"] == 8.0 and hourly_big["growth_time_ratio"] == 5.0
    table = benchmark.format_table(rows).splitlines()
    assert table[0].split()[:3] == ["nodes", "step", "res"]
    assert [line.split()[2] for line in table[1:]] == ["raw", "hourly", "hourly"]


def test_benchmark_resolution_reaches_the_generator_and_the_csv(tmp_path, monkeypatch):
    tiers = []

    def fake_tier(
        project_dir, scratch, nodes, days, step, seed, machine, clusters, resolution, source
    ):
        assert source is None
        tiers.append((nodes, resolution))
        (scratch / benchmark.tier_folder(nodes, step, days, resolution)).mkdir()
        return {
            "nodes": nodes, "days": days, "step_seconds": step, "resolution": resolution,
            "generate_s": 1.0, "landing_mb": 1.0, "dcgm_samples": 10 * nodes, "floor_s": 1.0,
            "full_build_s": 2.0, "incremental_s": 1.0, "full_peak_rss_mb": 100.0,
            "incremental_peak_rss_mb": 100.0, **machine,
        }  # fmt: skip

    monkeypatch.setattr(benchmark, "benchmark_tier", fake_tier)
    scratch, out = tmp_path / "scratch", tmp_path / "out"
    args = ["benchmark", "--tiers", "4,2", "--days", "2", "--resolution", "hourly"]
    assert main([*args, "--out", str(out), "--scratch", str(scratch)]) == 0
    assert tiers == [(4, "hourly"), (2, "hourly")]
    assert benchmark.tier_folder(2, 60, 2, "hourly") == "n2_s60_d2_hourly"
    assert not any(scratch.iterdir())  # each tier's folder deleted without --keep
    with (out / "benchmark.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["nodes"], r["resolution"]) for r in rows] == [("2", "hourly"), ("4", "hourly")]
    assert rows[1]["growth_data_ratio"] == "2.000000"


def test_landing_shape_reads_days_and_resolution(tmp_path):
    raw, hourly = tmp_path / "raw", tmp_path / "hourly"
    for landing, days in (
        (raw, ("2026-10-01", "2026-10-03")),
        (hourly, ("2026-09-30", "2026-10-01")),
    ):
        for day in days:
            (landing / "metrics" / "dcgm" / "c1" / day).mkdir(parents=True)
    (raw / "metrics" / "dcgm" / "c1" / "2026-10-03" / "DCGM_FI_DEV_GPU_UTIL.json").write_text("{}")
    seconds = hourly / "metrics" / "dcgm" / "c1" / "2026-10-01" / benchmark.HOURLY_SECONDS_FILE
    seconds.write_text("{}")
    # first to last day, a day without files in between included
    assert benchmark.landing_shape(raw) == ("2026-10-01", 3, "raw")
    assert benchmark.landing_shape(hourly) == ("2026-09-30", 2, "hourly")
    single = tmp_path / "single"
    (single / "metrics" / "kube" / "c1" / "2026-10-01").mkdir(parents=True)
    with pytest.raises(ValueError, match="needs at least 2"):
        benchmark.landing_shape(single)


def test_benchmark_landing_takes_one_tier_and_a_real_landing(tmp_path, capsys):
    args = ["benchmark", "--landing", str(tmp_path)]
    assert main([*args, "--tiers", "2,4"]) == 2
    assert "one value each" in capsys.readouterr().err
    assert main([*args, "--tiers", "2"]) == 2
    assert "no metrics/dcgm folder" in capsys.readouterr().err


def test_benchmark_measures_a_given_landing_without_changing_it(tmp_path, monkeypatch):
    """--landing: the copy is measured (floor for real; the dbt builds recorded, not run: the
    builds themselves are tiny_run's), the landing itself is left as it was."""
    from gpucost.synth import MonthConfig, generate_month

    source = tmp_path / "landing"
    generate_month(source, MonthConfig(seed=3, nodes=2, days=2, step_seconds=900))

    def listing() -> dict[str, tuple[int, int]]:
        return {
            p.relative_to(source).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in source.rglob("*")
            if p.is_file()
        }

    before, builds = listing(), []

    def recorded_build(project_dir, landing, warehouse, work, log):
        builds.append(sorted({p.name for p in landing.glob("metrics/*/*/*")}))
        return 0, 1.0, 100.0

    monkeypatch.setattr(benchmark, "run_dbt_build", recorded_build)
    monkeypatch.setattr(benchmark, "hourly_rows", lambda warehouse: 10 * len(builds))
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    arguments = ["benchmark", "--landing", str(source), "--tiers", "2", "--steps", "900"]
    assert main([*arguments, "--out", str(out), "--scratch", str(scratch)]) == 0
    assert listing() == before
    # the full build without the last day, the incremental one with it
    assert builds == [["2026-10-01"], ["2026-10-01", "2026-10-02"]]
    with (out / "benchmark.csv").open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert (row["nodes"], row["days"], row["resolution"], row["clusters"]) == ("2", "2", "raw", "2")
    # not generated here: no generation time, seed or generator sample count to report
    assert row["generate_s"] == row["seed"] == row["dcgm_samples_total"] == ""
    assert int(row["dcgm_samples"]) > 0 and float(row["heldback_mb"]) > 0
    assert not any(scratch.iterdir())  # the copy deleted without --keep
