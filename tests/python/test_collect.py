"""`gpucost collect` against a real Prometheus server (Debian's prometheus 2.42 and promtool).

The session's generated month (conftest.generated_month) is written as OpenMetrics text, turned into
TSDB blocks by ``promtool tsdb create-blocks-from openmetrics`` and served by a Prometheus started on
127.0.0.1 (a free port, a temporary storage folder, basic auth). Collected raw, the landing zone builds
marts equal to the generator's own, row for row, both ways; collected hourly, every bill line still
reconciles and the per-team totals move by less than a percent. scripts/install_prometheus.sh installs
the binaries (scripts/test.sh calls it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import stat
import subprocess
import time
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
import requests

from gpucost.commands.cli import main
from gpucost.commands.collect import SERVING_METRICS
from tests.python.conftest import Warehouse, _build
from tests.python.landing_zones import MODELS_ONLY

# the server and the collected months are module fixtures: the tests here share one worker

USER = "gpucost"
PASSWORD = "gpucost-test"
# bcrypt (cost 4) of PASSWORD, as Prometheus's web config wants it
PASSWORD_HASH = "$2b$04$XvGb4BvxBBRspQzSf98k0e8b5VGx5hD08TJ4Aq3up.48tMtbmSpOS"
START, DAYS = "2026-10-01", 3  # conftest.generated_month
# columns that name the landed file a row came from: the collected files have other names and sizes
FILE_COLUMNS = {"source_file"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def prometheus(generated_month, tmp_path_factory):
    """A Prometheus 2.x on 127.0.0.1 serving the generated month (basic auth); stopped at the end."""
    from gpucost.commands.openmetrics import write_openmetrics_file

    for binary in ("prometheus", "promtool"):
        if shutil.which(binary) is None:
            pytest.fail(f"{binary} is missing: run scripts/install_prometheus.sh")
    landing, _ = generated_month
    work = tmp_path_factory.mktemp("prometheus")
    counts = write_openmetrics_file(landing, work / "month.om")
    assert counts["samples"] > 0
    data = work / "data"
    command = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(work / "month.om")]
    subprocess.run([*command, str(data)], check=True, capture_output=True, timeout=300)
    web_config = work / "web.yml"
    web_config.write_text(f"basic_auth_users:\n  {USER}: '{PASSWORD_HASH}'\n", encoding="utf-8")
    (work / "prometheus.yml").write_text("global: {}\n", encoding="utf-8")
    port = _free_port()
    log = (work / "prometheus.log").open("w")
    process = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={work / 'prometheus.yml'}",
            f"--web.config.file={web_config}",
            f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{url}/-/ready", auth=(USER, PASSWORD), timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("prometheus did not start:\n" + (work / "prometheus.log").read_text())
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
        log.close()


def _collect(url: str, landing: Path, *extra: str) -> int:
    args = ["collect", "--url", url, "--landing", str(landing), "--start", START]
    args += ["--days", str(DAYS), "--no-progress", "--no-kube-snapshot", "--no-sacct", *extra]
    return main(args)


@pytest.fixture
def auth_env(monkeypatch):
    monkeypatch.setenv("GPUCOST_PROM_USER", USER)
    monkeypatch.setenv("GPUCOST_PROM_PASSWORD", PASSWORD)
    monkeypatch.delenv("GPUCOST_PROM_TOKEN", raising=False)


def _landing_without_metrics(generated: Path, landing: Path) -> None:
    """The generated landing zone's bills, reference data and sacct dumps (not from Prometheus)."""
    for child in generated.iterdir():
        if child.name != "metrics":
            shutil.copytree(child, landing / child.name)


@pytest.fixture(scope="module")
def collected(prometheus, generated_month, tmp_path_factory) -> dict[str, Path]:
    """The month collected from the server at both resolutions, next to the generator's bills."""
    generated, _ = generated_month
    out = {}
    env = {"GPUCOST_PROM_USER": USER, "GPUCOST_PROM_PASSWORD": PASSWORD}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        for resolution in ("raw", "hourly"):
            landing = tmp_path_factory.mktemp(f"collected_{resolution}") / "landing"
            _landing_without_metrics(generated, landing)
            # with the serving engines' counters, as the warehouse reads them (fct_inference_unit_cost)
            assert _collect(prometheus, landing, "--resolution", resolution, "--serving") == 0
            out[resolution] = landing
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return out


@pytest.fixture(scope="module")
def collected_raw_warehouse(collected, tmp_path_factory) -> Warehouse:
    # its marts are compared row for row with the session's generated warehouse (which ran the tests)
    return _build(collected["raw"], tmp_path_factory.mktemp("collected_raw_build"), *MODELS_ONLY)


@pytest.fixture(scope="module")
def collected_hourly_warehouse(collected, tmp_path_factory) -> Warehouse:
    return _build(collected["hourly"], tmp_path_factory.mktemp("collected_hourly_build"))


def _marts(path: Path) -> dict[str, list[str]]:
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.sql(
            "select table_name, column_name from duckdb_columns() where schema_name = 'marts' "
            "order by table_name, column_index"
        ).fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def test_collected_raw_builds_the_generators_marts_row_for_row(
    generated_warehouse, collected_raw_warehouse
):
    marts = _marts(generated_warehouse.path)
    assert _marts(collected_raw_warehouse.path) == marts
    assert {"fct_cost_allocation", "fct_chargeback_monthly", "fct_gpu_usage"} <= set(marts)
    with duckdb.connect() as con:
        con.sql(f"attach '{generated_warehouse.path}' as generated (read_only)")
        con.sql(f"attach '{collected_raw_warehouse.path}' as collected (read_only)")
        for table, columns in marts.items():
            kept = ", ".join(f'"{c}"' for c in columns if c not in FILE_COLUMNS)
            for a, b in (("generated", "collected"), ("collected", "generated")):
                extra = con.sql(
                    f"select count(*) from (select {kept} from {a}.marts.{table} "
                    f"except all select {kept} from {b}.marts.{table})"
                ).fetchall()[0][0]
                assert extra == 0, f"{table}: {extra} rows of {a} not in {b}"
        rows = con.sql("select count(*) from collected.marts.fct_cost_allocation").fetchall()
        assert rows[0][0] > 1000


def test_collected_raw_files_hold_the_generators_series(generated_month, collected):
    generated, _ = generated_month
    files = sorted(generated.glob("metrics/*/*/*/*.json"))
    assert len(files) > 50
    for path in files:
        twin = collected["raw"] / path.relative_to(generated)

        def series(p: Path) -> list:
            result = json.loads(p.read_text())["data"]["result"]
            return sorted(
                (
                    sorted((k, v) for k, v in s["metric"].items() if k != "cluster"),
                    [(int(t), float(v)) for t, v in s["values"]],
                )
                for s in result
            )

        assert series(twin) == series(path), path


def _team_totals(path: Path) -> dict[str, Decimal]:
    with duckdb.connect(str(path), read_only=True) as con:
        rows = con.sql(
            "select team_id, sum(effective_cost) from marts.fct_chargeback_monthly group by 1"
        ).fetchall()
    return dict(rows)


def test_collected_hourly_reconciles_every_bill_line(
    generated_warehouse, collected_hourly_warehouse, collected
):
    hourly = collected_hourly_warehouse
    # a landing zone of hourly aggregates, about six times fewer samples at this 10-minute scrape
    assert list(collected["hourly"].glob("metrics/dcgm/*/*/gpucost_dcgm_sample_seconds_1h.json"))
    # every bill line's allocations sum exactly to the line: the same per-line sums as the raw build
    # (whose data test assert_allocations_reconcile_to_each_bill_line checks them against the bill; the
    # hourly build ran it too)
    per_line = (
        "select charge_id, sum(billed_cost), sum(effective_cost), count(distinct allocation_kind) > 0"
        " from marts.fct_cost_allocation group by 1 order by 1"
    )
    lines = hourly.sql(per_line)
    assert len(lines) > 500
    assert lines == generated_warehouse.sql(per_line)
    assert hourly.sql("select bool_and(is_reconciled) from marts.rpt_reconciliation") == [(True,)]
    bill = "select sum(effective_cost), sum(billed_cost) from marts.fct_chargeback_monthly"
    assert hourly.sql(bill) == generated_warehouse.sql(bill)
    # GPU time: the same GPU-hours; who used them moves a little (hourly tenancy, hourly requests)
    usage = "select sum(gpu_ms), sum(requested_gpu_ms) from intermediate.int_gpu_usage_hourly"
    (raw_gpu, raw_requested), (hourly_gpu, hourly_requested) = (
        generated_warehouse.sql(usage)[0],
        hourly.sql(usage)[0],
    )
    assert abs(hourly_gpu - raw_gpu) <= raw_gpu * 0.001
    assert abs(hourly_requested - raw_requested) <= raw_requested * 0.01
    raw_teams = _team_totals(generated_warehouse.path)
    hourly_teams = _team_totals(hourly.path)
    assert set(hourly_teams) == set(raw_teams)
    for team, amount in raw_teams.items():
        assert abs(hourly_teams[team] - amount) <= abs(amount) * Decimal("0.01"), team


def _landed(path: Path) -> dict[tuple, list[tuple[int, float]]]:
    result = json.loads(path.read_text())["data"]["result"]
    landed = {tuple(s["metric"].items()): [(t, float(v)) for t, v in s["values"]] for s in result}
    assert len(landed) == len(result), path  # one series per label set
    return landed


def test_generated_hourly_files_are_the_collectors(collected, tmp_path):
    """`gpucost generate --resolution hourly` writes the files the collector landed at --resolution
    hourly from the raw month, byte for byte, but for the DCGM fields' hourly means: the same
    series, labels (in their order) and hour stamps, values within 1e-12 (relative), as Prometheus
    2.42's avg_over_time is a running Kahan mean (v/n - mean/n) and the generator's an exact sum
    / n: the two round the last bits apart in 4,467 of this month's 20,400 means."""
    from tests.python.landing_zones import generated_month

    summary = generated_month(tmp_path / "landing", resolution="hourly")
    assert summary["resolution"] == "hourly"
    generated, collected_hourly = tmp_path / "landing", collected["hourly"]

    def files(root: Path) -> set[Path]:
        return {p.relative_to(root) for p in root.rglob("*") if p.is_file()}

    assert files(generated) == files(collected_hourly)
    metrics = sorted(p for p in files(generated) if p.parts[0] == "metrics")
    assert {p.parts[1] for p in metrics} == {"dcgm", "kube", "serving"}
    assert Path("metrics/dcgm/gpu-east/2026-10-02/gpucost_dcgm_sample_seconds_1h.json") in metrics
    compared = 0
    for relative in sorted(files(generated)):
        ours, theirs = generated / relative, collected_hourly / relative
        if relative.parts[1] != "dcgm" or relative.stem == "gpucost_dcgm_sample_seconds_1h":
            assert ours.read_bytes() == theirs.read_bytes(), relative
            continue
        mine, landed = _landed(ours), _landed(theirs)
        assert list(mine) == list(landed), relative  # labels and series order
        for labels, values in landed.items():
            assert [t for t, _ in mine[labels]] == [t for t, _ in values], (relative, labels)
            for (_, a), (_, b) in zip(mine[labels], values, strict=True):
                assert a == pytest.approx(b, rel=1e-12, abs=1e-12), (relative, labels)
            compared += len(values)
    assert compared > 10_000  # the DCGM means


def test_collect_resumes_and_skips_complete_days(prometheus, auth_env, tmp_path, capsys):
    landing = tmp_path / "landing"
    assert _collect(prometheus, landing, "--resolution", "hourly") == 0
    first = capsys.readouterr().out
    assert "0 complete group-days skipped" in first
    files = sorted(landing.glob("metrics/**/*.json"))
    stamps = {path: path.stat().st_mtime_ns for path in files}
    assert _collect(prometheus, landing, "--resolution", "hourly") == 0
    assert "Landed 0 files" in capsys.readouterr().out
    assert {path: path.stat().st_mtime_ns for path in files} == stamps
    # a landed file gone: its day is collected again, the other days are not
    files[0].unlink()
    assert _collect(prometheus, landing, "--resolution", "hourly") == 0
    again = capsys.readouterr().out
    assert files[0].is_file()
    assert "for 1 group-days" in again
    assert not list(landing.rglob("*.partial"))
    # one resolution per landing zone
    assert _collect(prometheus, landing, "--resolution", "raw") == 2
    assert "one resolution" in capsys.readouterr().err


def test_collect_chunks_a_day_under_the_points_limit(prometheus, auth_env, tmp_path, collected):
    landing = tmp_path / "landing"
    # 144 ten-minute points a day: in chunks of at most 50 points, the same files as one query
    assert _collect(prometheus, landing, "--max-points", "50", "--serving") == 0
    files = sorted(collected["raw"].glob("metrics/**/*.json"))
    assert files
    for path in files:
        twin = landing / path.relative_to(collected["raw"])
        assert json.loads(twin.read_text()) == json.loads(path.read_text()), path


def _assert_one_line_exit_2(code: int, capsys, *words: str) -> None:
    captured = capsys.readouterr()
    assert code == 2
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    for word in words:
        assert word in lines[0], lines[0]


def test_collect_errors_are_one_actionable_line(
    prometheus, auth_env, tmp_path, capsys, monkeypatch
):
    landing = tmp_path / "landing"
    code = _collect(f"http://127.0.0.1:{_free_port()}", landing, "--retries", "0")
    _assert_one_line_exit_2(code, capsys, "cannot reach", "--url")
    monkeypatch.setenv("GPUCOST_PROM_PASSWORD", "wrong")
    _assert_one_line_exit_2(_collect(prometheus, landing), capsys, "authentication failed", "401")
    monkeypatch.setenv("GPUCOST_PROM_PASSWORD", PASSWORD)
    _assert_one_line_exit_2(
        main(["collect", "--url", prometheus, "--landing", str(landing), "--start", "yesterday"]),
        capsys,
        "--start",
        "YYYY-MM-DD",
    )
    _assert_one_line_exit_2(
        _collect(prometheus, landing, "--match", "cluster=~"), capsys, "refused the query"
    )
    _assert_one_line_exit_2(_collect("prometheus:9090", landing), capsys, "http://")
    monkeypatch.setenv("GPUCOST_PROM_TOKEN", "t")
    _assert_one_line_exit_2(_collect(prometheus, landing), capsys, "not both")


def _fake_binary(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_collect_lands_kubectl_and_sacct_output_or_says_why_not(
    prometheus, auth_env, tmp_path, capsys, monkeypatch
):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    landing = tmp_path / "landing"
    args = ["collect", "--url", prometheus, "--landing", str(landing), "--start", START]
    args += ["--no-progress", "--cluster", "gpu-east", "--slurm-cluster", "hpc"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "kubectl not found on PATH" in out
    assert "sacct not found on PATH" in out
    pods = {"apiVersion": "v1", "kind": "List", "items": [], "metadata": {}}
    _fake_binary(bin_dir, "kubectl", f"echo '{json.dumps(pods)}'\n")
    _fake_binary(bin_dir, "sacct", 'echo "JobID|JobIDRaw"; echo "1|1 $*"\n')
    assert main([*args, "--force"]) == 0
    out = capsys.readouterr().out
    snapshots = list(landing.glob("inventory/kube/gpu-east/pods-*.json"))
    assert len(snapshots) == 1
    assert json.loads(snapshots[0].read_text())["kind"] == "List"
    dump = landing / "scheduler" / "slurm" / "hpc" / f"sacct-{START}.txt"
    assert "--starttime=2026-10-01T00:00:00" in dump.read_text()
    assert "--parsable2" in dump.read_text()


def test_openmetrics_escapes_label_values_promtool_reads_back(tmp_path):
    from gpucost.commands.openmetrics import write_openmetrics_file

    tricky = 'a"b\\c\nd'
    folder = tmp_path / "landing" / "metrics" / "kube" / "east" / "2026-10-01"
    folder.mkdir(parents=True)
    response = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {"__name__": "kube_pod_info", "pod": tricky},
                    "values": [[1790812800, "1"], [1790813400, "1"]],
                }
            ],
        },
    }
    (folder / "kube_pod_info.json").write_text(json.dumps(response))
    counts = write_openmetrics_file(tmp_path / "landing", tmp_path / "month.om")
    assert counts == {"families": 1, "series": 1, "samples": 2}
    text = (tmp_path / "month.om").read_text()
    assert text.endswith("# EOF\n")
    data = tmp_path / "data"
    subprocess.run(
        [
            "promtool",
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(tmp_path / "month.om"),
            str(data),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (data / "wal").mkdir(exist_ok=True)  # promtool tsdb dump opens the head's WAL too
    dump = subprocess.run(
        ["promtool", "tsdb", "dump", str(data)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    # Go quotes the value back exactly as it was escaped; the folder's cluster joined the labels
    assert dump.count('cluster="east"') == 2
    assert 'pod="a\\"b\\\\c\\nd"' in dump
    assert "1790812800000" in dump and "1790813400000" in dump


def test_collect_lands_serving_counters_apart(prometheus, auth_env, generated_month, collected):
    """The generated month's vLLM / TGI / Triton counters: raw, the landed files hold the generator's
    series (test_collected_raw_files_hold_the_generators_series); hourly, each series' last sample of
    each hour, stamped at the hour's start (last_over_time)."""
    generated, _ = generated_month
    files = sorted(generated.glob("metrics/serving/*/*/*.json"))
    assert {p.stem for p in files} == {m.replace(":", "_") for m in SERVING_METRICS}
    for path in files:
        expected = []
        for series in json.loads(path.read_text())["data"]["result"]:
            last: dict[int, float] = {}
            for t, v in series["values"]:
                last[int(t) - int(t) % 3600] = float(v)  # in time order: the hour's last wins
            labels = sorted((k, v) for k, v in series["metric"].items() if k != "cluster")
            expected.append((labels, sorted(last.items())))
        twin = collected["hourly"] / path.relative_to(generated)
        landed = [
            (
                sorted((k, v) for k, v in s["metric"].items() if k != "cluster"),
                [(int(t), float(v)) for t, v in s["values"]],
            )
            for s in json.loads(twin.read_text())["data"]["result"]
        ]
        assert sorted(landed) == sorted(expected), path


def test_collect_says_what_reads_the_serving_counters(prometheus, auth_env, tmp_path, capsys):
    args = ["collect", "--url", prometheus, "--landing", str(tmp_path), "--start", START]
    args += ["--no-progress", "--no-kube-snapshot", "--no-sacct", "--serving"]
    assert main(args) == 0
    assert "fct_inference_unit_cost reads them" in capsys.readouterr().out


def test_collect_auth_headers_and_tls_options_reach_the_http_client(tmp_path, monkeypatch):
    from gpucost.commands.collect import add_parser, client_from_args

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.delenv("GPUCOST_PROM_USER", raising=False)
    monkeypatch.setenv("GPUCOST_PROM_TOKEN", "s3cret")
    args = parser.parse_args(
        ["collect", "--url", "https://mimir.example/prometheus/", "--ca-file", str(ca),
         "--header", "X-Scope-OrgID: acme", "--timeout", "5"]
    )  # fmt: skip
    client = client_from_args(args)
    assert client.url == "https://mimir.example/prometheus"
    assert client.session.headers["Authorization"] == "Bearer s3cret"
    assert client.session.headers["X-Scope-OrgID"] == "acme"
    assert client.session.verify == str(ca)
    assert client.session.auth is None
    retry = client.session.get_adapter("https://mimir.example").max_retries
    assert retry.total == 5 and retry.backoff_factor > 0 and 503 in retry.status_forcelist
    assert "POST" in retry.allowed_methods  # queries are POSTed (long selectors), and retried
    monkeypatch.delenv("GPUCOST_PROM_TOKEN")
    monkeypatch.setenv("GPUCOST_PROM_USER", "u")
    monkeypatch.setenv("GPUCOST_PROM_PASSWORD", "p")
    args = parser.parse_args(["collect", "--url", "https://p.example", "--insecure"])
    client = client_from_args(args)
    assert client.session.auth == ("u", "p")
    assert client.session.verify is False
    assert "Authorization" not in client.session.headers
