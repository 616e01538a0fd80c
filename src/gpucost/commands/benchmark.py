"""``gpucost benchmark``: how far the full dbt build is from the cost of reading the telemetry once.

For each fleet size (``--tiers``, GPU nodes) and sample interval (``--steps``, seconds) the
command generates ``--days`` days with :func:`gpucost.synth.generator.generate_month`, holds the
last
day's metrics back, and measures on this machine, in one run:

- ``floor_s``: a fresh in-process DuckDB connection with the memory_limit of ``profiles.yml`` and
  the threads of dbt's connection (GPUCOST_DUCKDB_THREADS, else one per core; the profile's
  ``threads`` are how many models dbt runs at once)
  reads every landed DCGM file (``--resolution hourly``: the hourly files) once with the
  ``read_json`` call of ``macros/landing.sql``, unnests series and samples, and groups the samples
  by cluster, Hostname and hour (count and sum of the values). No warehouse can build the marts
  faster than it can read its input once: this is the floor.
- ``full_build_s``: ``dbt build`` of the whole project into a fresh warehouse file (a subprocess).
- ``incremental_s``: the held-back day is landed and ``dbt build`` runs again on the same file
  (the telemetry staging tables read only the new files, ``int_gpu_usage_hourly`` recomputes its
  lookback window; the rest of the project rebuilds).
- ``full_peak_rss_mb`` / ``incremental_peak_rss_mb``: the peak resident memory of the dbt process
  tree, sampled from ``/proc/<pid>/status`` every 0.2 s
  (:func:`gpucost.commands.benchmark_measure.run_measured`).

With ``--landing DIR`` a landing zone written before (``gpucost generate``) is measured instead of
a generated one: copied into the scratch folder, never changed (:func:`landing_shape` reads its
days and resolution).

It prints a table and the ratios (build / floor, incremental / full, tier-to-tier growth of time
against growth of data) and writes ``benchmark.csv`` and a plot (``benchmark.png``, or
``benchmark.svg`` when Pillow is not importable) to ``--out``. It is a measurement, not a test: it
never fails on a slow result, only on a failed generation or build.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gpucost.commands.benchmark_measure import machine_info, run_measured
from gpucost.commands.project import profile_settings
from gpucost.synth.hourly import DCGM_SECONDS_METRIC, RESOLUTIONS

# One CSV row per tier x step. Machine columns repeat on every row so a row stands on its own.
CSV_COLUMNS = [
    "nodes",
    "days",
    "step_seconds",
    "resolution",
    "seed",
    "clusters",
    "generate_s",
    "landing_mb",
    "heldback_mb",
    "dcgm_files",
    "dcgm_samples",
    "dcgm_samples_total",
    "floor_node_hours",
    "floor_s",
    "full_build_s",
    "full_peak_rss_mb",
    "incremental_s",
    "incremental_peak_rss_mb",
    "hourly_rows_full",
    "hourly_rows_incremental",
    "build_over_floor",
    "incremental_over_full",
    "growth_data_ratio",
    "growth_time_ratio",
    "growth_time_over_data",
    "threads",
    "duckdb_threads",
    "memory_limit",
    "nproc",
    "mem_total_gb",
    "cpu_model",
    "python",
    "duckdb",
    "dbt_core",
    "dbt_duckdb",
    "measured_at",
]

# The floor: the DCGM files read with read_prometheus_series' read_json call, grouped by node-hour.
FLOOR_SQL = """
with responses as (
    select
        filename,
        data.resultType as result_type,
        unnest(data.result) as series
    from read_json(
        $files,
        format = 'auto',
        filename = true,
        maximum_object_size = 268435456,
        columns = {
            status: 'varchar',
            data: '__DATA_TYPE__'
        }
    )
    where status = 'success'
),
samples as (
    select
        filename,
        result_type,
        series.metric as labels,
        unnest(series."values") as sample
    from responses
),
node_hours as (
    select
        regexp_extract(filename, '/metrics/dcgm/([^/]+)/', 1) as cluster_id,
        coalesce(labels['Hostname'], labels['hostname']) as node_name,
        time_bucket(interval 1 hour, to_timestamp(cast(sample[1] as double))) as usage_hour,
        count(*) as sample_count,
        sum(cast(sample[2] as double)) as value_sum
    from samples
    where result_type = 'matrix'
    group by all
)
select count(*) as node_hours, sum(sample_count) as samples, sum(value_sum) as value_sum
from node_hours
"""
# The type read_prometheus_series (macros/landing.sql) gives the response's data member.
DATA_TYPE = (
    "struct(resultType varchar, result struct(metric map(varchar, varchar), "
    '"values" varchar[][])[])'
)
FLOOR_SQL = FLOOR_SQL.replace("__DATA_TYPE__", DATA_TYPE)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers: {text!r}") from error
    if not values or any(value <= 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected positive integers: {text!r}")
    return values


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "benchmark",
        help="time the dbt build against the floor (one scan of the telemetry) at fleet sizes",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "--tiers", type=_int_list, default=[16, 128], help="GPU node counts (default 16,128)"
    )
    parser.add_argument("--days", type=int, default=30, help="days per tier, >= 2 (default 30)")
    parser.add_argument(
        "--steps",
        "--step",
        dest="steps",
        type=_int_list,
        default=[60],
        help="sample intervals in seconds, e.g. 60,15 (default 60)",
    )
    parser.add_argument(
        "--resolution",
        choices=RESOLUTIONS,
        default="raw",
        help="telemetry the tiers land: raw samples (default), or the hourly files of `gpucost "
        "collect --resolution hourly`, written directly by the generator (the floor then reads "
        "the hourly DCGM files)",
    )
    parser.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    parser.add_argument(
        "--clusters",
        type=int,
        default=2,
        help="Kubernetes clusters the nodes are spread over (default 2, the generator's); one "
        "DCGM file holds one cluster x day x metric, so more clusters make smaller files",
    )
    parser.add_argument(
        "--scratch", help="folder for the landing zones and warehouses (default: a temp dir)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch data")
    parser.add_argument(
        "--landing",
        help="measure this landing zone (e.g. written once by `gpucost generate`) instead of "
        "generating one: it is copied into the scratch folder and never changed; its first and "
        "last metrics day set the days, its hourly DCGM files (if any) the resolution, and "
        "--tiers / --steps (one value each) only label the row",
    )
    parser.add_argument(
        "--out", default="target/benchmark", help="results folder (default target/benchmark/)"
    )
    parser.set_defaults(func=cmd_benchmark)


# --------------------------------------------------------------------------------------------
# Measures


def link_or_copy(source: str, target: str) -> None:
    """A hard link to a landed file (the build reads it, never writes it; the held-back day is moved
    by its link, the source's folders stay as they were), or a copy across file systems: a
    1,000-node week is 12 GB that need not be copied."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _tree_size_mb(path: Path) -> float:
    total = 0
    for file in path.rglob("*"):
        if file.is_file():
            total += file.stat().st_size
    return total / 1e6


def hold_back_last_day(landing: Path, held: Path, start: str, days: int) -> list[Path]:
    """Move ``metrics/<kind>/<cluster>/<last day>/`` out of the landing zone into ``held``."""
    last = (datetime.fromisoformat(start) + timedelta(days=days - 1)).strftime("%Y-%m-%d")
    moved = []
    for folder in sorted(landing.glob(f"metrics/*/*/{last}")):
        target = held / folder.relative_to(landing)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), str(target))
        moved.append(target)
    if not moved:
        raise RuntimeError(f"no metrics folders for {last} under {landing}/metrics")
    return moved


def landing_shape(landing: Path) -> tuple[str, int, str]:
    """(first day, number of days, resolution) of a landed month: its metrics day folders
    (``metrics/<kind>/<cluster>/<YYYY-MM-DD>/``) from the first to the last, and ``hourly`` when
    its DCGM files include the collector's hourly sample-seconds series. ``ValueError`` (one
    line) when it has fewer than two days of metrics."""
    days = sorted(
        {
            p.name
            for p in landing.glob("metrics/*/*/*")
            if p.is_dir() and re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.name)
        }
    )
    if len(days) < 2:
        raise ValueError(
            f"{landing} has {len(days)} day(s) of metrics under metrics/<kind>/<cluster>/<day>/;"
            " the benchmark needs at least 2 (one is held back)"
        )
    first, last = (datetime.fromisoformat(d) for d in (days[0], days[-1]))
    hourly = any(landing.glob(f"metrics/dcgm/*/*/{HOURLY_SECONDS_FILE}"))
    return days[0], (last - first).days + 1, "hourly" if hourly else "raw"


HOURLY_SECONDS_FILE = f"{DCGM_SECONDS_METRIC}.json"
"""The hourly DCGM file of GPU seconds, as the collector names it (gpucost.commands.collect)."""


def land_held_back(landing: Path, held: Path) -> None:
    for folder in sorted(held.glob("metrics/*/*/*")):
        target = landing / folder.relative_to(held)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(folder), str(target))


def measure_floor(landing: Path, memory_limit: str) -> tuple[float, int, int, int, int]:
    """Seconds to scan the landed DCGM samples once and group them by node-hour, on the threads
    dbt's connection runs each query on (GPUCOST_DUCKDB_THREADS, else DuckDB's own: one per core).

    Returns (seconds, files, samples, node_hours, DuckDB threads)."""
    import duckdb

    from gpucost.engines.duckdb_plugin import cap_threads

    files = sorted(str(path) for path in landing.glob("metrics/dcgm/**/*.json"))
    if not files:
        raise RuntimeError(f"no DCGM files under {landing}/metrics/dcgm")
    started = time.perf_counter()
    con = duckdb.connect(":memory:")
    try:
        con.execute("set memory_limit = ?", [memory_limit])
        cap_threads(con)
        ((threads,),) = con.execute("select current_setting('threads')").fetchall()
        con.execute("set preserve_insertion_order = true")
        con.execute("set TimeZone = 'UTC'")
        rows = con.execute(FLOOR_SQL, {"files": files}).fetchall()
    finally:
        con.close()
    seconds = time.perf_counter() - started
    node_hours, samples, _ = rows[0]
    return seconds, len(files), int(samples or 0), int(node_hours or 0), int(threads)


def build_failure(
    code: int, work: Path, log: str, since: float, seconds: float, peak_rss_mb: float
) -> str:
    """The one line a failed benchmark build raises: the exit code, how long it ran and its peak
    memory (what a memory target is read against, failed or not), the log, and the advice when
    DuckDB ran out of memory (gpucost.commands.project.out_of_memory_hint)."""
    from gpucost.commands.project import out_of_memory_hint

    hint = out_of_memory_hint(work / "target" / "run_results.json", since)
    ran = f"after {seconds:.1f}s, peak RSS {peak_rss_mb:.0f} MB"
    return f"dbt build failed (exit {code}) {ran}; see {work / log}" + (f". {hint}" if hint else "")


def run_dbt_build(project_dir: Path, landing: Path, warehouse: Path, work: Path, log: Path):
    from gpucost.commands.project import dbt_env, dbt_executable

    env = dbt_env(landing, warehouse)
    command = [dbt_executable(), "build", "--project-dir", str(project_dir)]
    command += ["--profiles-dir", str(project_dir)]
    command += ["--target-path", str(work / "target"), "--log-path", str(work / "logs")]
    return run_measured(command, env, project_dir, log)


def hourly_rows(warehouse: Path) -> int:
    """Rows of the incremental model, to show the incremental build added the held-back day."""
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "select table_schema from information_schema.tables "
            "where table_name = 'int_gpu_usage_hourly'"
        ).fetchall()
        if not rows:
            return 0
        return con.execute(f'select count(*) from "{rows[0][0]}".int_gpu_usage_hourly').fetchall()[
            0
        ][0]
    finally:
        con.close()


# --------------------------------------------------------------------------------------------
# Ratios, table, plot


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def add_ratios(rows: list[dict]) -> None:
    """build / floor, incremental / full, and growth from the previous tier at the same step and
    resolution."""
    for row in rows:
        row["build_over_floor"] = _ratio(row["full_build_s"], row["floor_s"])
        row["incremental_over_full"] = _ratio(row["incremental_s"], row["full_build_s"])
    for kind in sorted({_kind(row) for row in rows}):
        same_step = sorted(
            (row for row in rows if _kind(row) == kind), key=lambda row: row["nodes"]
        )
        previous = None
        for row in same_step:
            if previous is None:
                row["growth_data_ratio"] = row["growth_time_ratio"] = None
                row["growth_time_over_data"] = None
            else:
                row["growth_data_ratio"] = _ratio(row["dcgm_samples"], previous["dcgm_samples"])
                row["growth_time_ratio"] = _ratio(row["full_build_s"], previous["full_build_s"])
                row["growth_time_over_data"] = _ratio(
                    row["growth_time_ratio"], row["growth_data_ratio"]
                )
            previous = row


def _kind(row: dict) -> tuple[int, str]:
    return row["step_seconds"], row.get("resolution", "raw")


def _fmt(value, digits: int = 2) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def format_table(rows: list[dict]) -> str:
    header = (
        f"{'nodes':>5} {'step':>5} {'res':>6} {'days':>4} {'landing MB':>10} {'samples':>12} "
        f"{'gen s':>7} "
        f"{'floor s':>8} {'full s':>8} {'incr s':>7} {'RSS MB':>7} {'full/floor':>10} "
        f"{'incr/full':>9} {'data x':>7} {'time x':>7}"
    )
    lines = [header]
    for row in rows:
        lines.append(
            f"{row['nodes']:>5} {row['step_seconds']:>5} {row.get('resolution', 'raw'):>6} "
            f"{row['days']:>4} {row['landing_mb']:>10.1f} {row['dcgm_samples']:>12,} "
            f"{_fmt(row['generate_s'], 1):>7} "
            f"{row['floor_s']:>8.1f} {row['full_build_s']:>8.1f} {row['incremental_s']:>7.1f} "
            f"{max(row['full_peak_rss_mb'], row['incremental_peak_rss_mb']):>7.0f} "
            f"{_fmt(row['build_over_floor']):>10} {_fmt(row['incremental_over_full'], 3):>9} "
            f"{_fmt(row['growth_data_ratio']):>7} {_fmt(row['growth_time_ratio']):>7}"
        )
    return "\n".join(lines)


def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {
                    key: ("" if row.get(key) is None else _csv_value(row.get(key)))
                    for key in CSV_COLUMNS
                }
            )


def _csv_value(value):
    return f"{value:.6f}" if isinstance(value, float) else value


_BARS = (("floor_s", "floor (1 scan)", "#9e9e9e"), ("full_build_s", "full dbt build", "#1f77b4"))
_BARS += (("incremental_s", "incremental build", "#ff7f0e"),)


def _bar_layout(rows: list[dict], width: int, height: int):
    """Grouped bars, one group per tier x step: (groups, bars, scale) in pixel coordinates."""
    left, bottom, top = 70, 60, 56
    plot_h = height - bottom - top
    peak = max((row[key] for row in rows for key, _, _ in _BARS), default=1.0) or 1.0
    group_w = (width - left - 20) / max(len(rows), 1)
    bar_w = group_w * 0.8 / len(_BARS)
    groups, bars = [], []
    for i, row in enumerate(rows):
        x0 = left + i * group_w + group_w * 0.1
        label = f"{row['nodes']} nodes, {row['step_seconds']}s, {row['days']}d"
        if row.get("resolution", "raw") != "raw":
            label += f", {row['resolution']}"
        groups.append((x0 + group_w * 0.4, height - bottom + 18, label))
        for j, (key, _, color) in enumerate(_BARS):
            h = plot_h * row[key] / peak
            bars.append((x0 + j * bar_w, height - bottom - h, bar_w - 2, h, color, row[key]))
    return groups, bars, (left, bottom, top, plot_h, peak)


def _seconds(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def write_plot(rows: list[dict], out_dir: Path) -> Path:
    """A small grouped bar chart of the wall times: PNG with Pillow (installed with streamlit),
    else a dependency-free SVG."""
    width, height = 760, 360
    groups, bars, (left, bottom, top, plot_h, peak) = _bar_layout(rows, width, height)
    title = "gpucost benchmark: wall seconds (this machine)"
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        return _write_svg(rows, out_dir, width, height, title)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.text((left, 12), title, fill="black")
    draw.line((left, top, left, height - bottom), fill="black")
    draw.line((left, height - bottom, width - 20, height - bottom), fill="black")
    for tick in range(5):
        value = peak * tick / 4
        y = height - bottom - plot_h * tick / 4
        draw.line((left - 4, y, left, y), fill="black")
        draw.text((8, y - 6), f"{value:.0f}s", fill="black")
    for x, y, w, h, color, value in bars:
        draw.rectangle((x, y, x + w, y + h), fill=color)
        draw.text((x, y - 12), _seconds(value), fill="black")
    for x, y, label in groups:
        draw.text((x - 3 * len(label), y), label, fill="black")
    for k, (_, name, color) in enumerate(_BARS):
        x = left + 150 * k
        y = 28
        draw.rectangle((x, y, x + 10, y + 10), fill=color)
        draw.text((x + 16, y - 1), name, fill="black")
    path = out_dir / "benchmark.png"
    image.save(path)
    return path


def _write_svg(rows: list[dict], out_dir: Path, width: int, height: int, title: str) -> Path:
    groups, bars, (left, bottom, top, plot_h, peak) = _bar_layout(rows, width, height)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="20" font-size="13">{title}</text>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 20}" y2="{height - bottom}" '
        'stroke="black"/>',
    ]
    for tick in range(5):
        y = height - bottom - plot_h * tick / 4
        parts.append(f'<text x="8" y="{y + 4:.1f}">{peak * tick / 4:.0f}s</text>')
    for x, y, w, h, color, value in bars:
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{color}"/>'
        )
        parts.append(f'<text x="{x:.1f}" y="{y - 3:.1f}">{_seconds(value)}</text>')
    for x, y, label in groups:
        parts.append(f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{label}</text>')
    for k, (_, name, color) in enumerate(_BARS):
        parts.append(f'<rect x="{left + 150 * k}" y="28" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{left + 150 * k + 16}" y="37">{name}</text>')
    parts.append("</svg>")
    path = out_dir / "benchmark.svg"
    path.write_text("\n".join(parts) + "\n")
    return path


# --------------------------------------------------------------------------------------------
# The command


def _say(message: str) -> None:
    print(f"[{datetime.now(UTC).strftime('%H:%M:%S')}] {message}", flush=True)


def tier_folder(nodes: int, step: int, days: int, resolution: str = "raw") -> str:
    """A tier's scratch folder (landing zone, held-back day, warehouse, dbt logs)."""
    return f"n{nodes}_s{step}_d{days}" + ("" if resolution == "raw" else f"_{resolution}")


def benchmark_tier(
    project_dir: Path,
    scratch: Path,
    nodes: int,
    days: int,
    step: int,
    seed: int | None,
    machine: dict,
    clusters: int = 2,
    resolution: str = "raw",
    source: Path | None = None,
) -> dict:
    from gpucost.synth import MonthConfig, generate_month

    start = "2026-10-01"
    if source is not None:
        # what the landing is, not what the flags say: the seed is unknown, the Kubernetes
        # clusters counted
        start, days, resolution = landing_shape(source)
        kube = source / "metrics" / "kube"
        clusters = sum(1 for p in kube.iterdir() if p.is_dir()) if kube.is_dir() else 0
        seed = None
    threads, memory_limit = profile_settings()
    work = scratch / tier_folder(nodes, step, days, resolution)
    if work.exists():
        shutil.rmtree(work)
    landing, held = work / "landing", work / "heldback"
    tag = f"{nodes} nodes x {days} days @ {step}s" + (
        f", {resolution}" if resolution != "raw" else ""
    )

    generate_s: float | None = None
    samples_total: int | None = None
    if source is None:
        _say(f"{tag}: generating into {landing}")
        started = time.perf_counter()
        config = MonthConfig(
            seed=seed,
            nodes=nodes,
            days=days,
            step_seconds=step,
            start=start,
            clusters=clusters,
            resolution=resolution,
        )
        samples_total = generate_month(landing, config)["samples"]
        generate_s = time.perf_counter() - started
        _say(f"{tag}: generated {samples_total:,} DCGM samples in {generate_s:.1f}s")
    else:
        _say(f"{tag}: linking {source} into {landing} ({start}, {days} days)")
        shutil.copytree(source, landing, copy_function=link_or_copy)
    hold_back_last_day(landing, held, start, days)
    landing_mb, heldback_mb = _tree_size_mb(landing), _tree_size_mb(held)
    _say(f"{tag}: landing {landing_mb:.0f} MB (+{heldback_mb:.0f} MB held back: the last day)")

    floor_s, dcgm_files, samples, node_hours, duckdb_threads = measure_floor(landing, memory_limit)
    _say(
        f"{tag}: floor {floor_s:.1f}s (DuckDB, {duckdb_threads} threads, {memory_limit}; dbt runs"
        f" {threads} model(s) at once: {dcgm_files} files, {samples:,} samples -> {node_hours:,}"
        " node-hours)"
    )

    warehouse = work / "warehouse.duckdb"
    _say(f"{tag}: full dbt build (log {work / 'full_build.log'})")
    started_build = time.time()
    code, full_s, full_rss = run_dbt_build(
        project_dir, landing, warehouse, work, work / "full_build.log"
    )
    if code:
        raise RuntimeError(
            build_failure(code, work, "full_build.log", started_build, full_s, full_rss)
        )
    rows_full = hourly_rows(warehouse)
    _say(
        f"{tag}: full build {full_s:.1f}s, peak RSS {full_rss:.0f} MB "
        f"({full_s / floor_s:.2f}x floor)"
    )

    land_held_back(landing, held)
    _say(f"{tag}: landed the held-back day; incremental dbt build")
    started_build = time.time()
    code, incr_s, incr_rss = run_dbt_build(
        project_dir, landing, warehouse, work, work / "incremental_build.log"
    )
    if code:
        raise RuntimeError(
            build_failure(code, work, "incremental_build.log", started_build, incr_s, incr_rss)
        )
    rows_incr = hourly_rows(warehouse)
    _say(
        f"{tag}: incremental build {incr_s:.1f}s, peak RSS {incr_rss:.0f} MB "
        f"({incr_s / full_s:.1%} of full); int_gpu_usage_hourly {rows_full:,} -> {rows_incr:,} rows"
    )
    return {
        "nodes": nodes,
        "days": days,
        "step_seconds": step,
        "resolution": resolution,
        "seed": seed,
        "clusters": clusters,
        "generate_s": generate_s,
        "landing_mb": landing_mb,
        "heldback_mb": heldback_mb,
        "dcgm_files": dcgm_files,
        "dcgm_samples": samples,
        "dcgm_samples_total": samples_total,
        "floor_node_hours": node_hours,
        "floor_s": floor_s,
        "full_build_s": full_s,
        "full_peak_rss_mb": full_rss,
        "incremental_s": incr_s,
        "incremental_peak_rss_mb": incr_rss,
        "hourly_rows_full": rows_full,
        "hourly_rows_incremental": rows_incr,
        "threads": threads,
        "duckdb_threads": duckdb_threads,
        "memory_limit": memory_limit,
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **machine,
    }


def cmd_benchmark(args: argparse.Namespace) -> int:
    import duckdb

    from gpucost.commands.project import find_project_dir

    if args.days < 2:
        print("gpucost benchmark: --days must be >= 2 (one day is held back)", file=sys.stderr)
        return 2
    source = Path(args.landing).resolve() if args.landing else None
    if source is not None:
        if len(args.tiers) != 1 or len(args.steps) != 1:
            print(
                "gpucost benchmark: with --landing, --tiers and --steps take one value each"
                " (they label the row)",
                file=sys.stderr,
            )
            return 2
        if not (source / "metrics" / "dcgm").is_dir():
            print(f"gpucost benchmark: {source} has no metrics/dcgm folder", file=sys.stderr)
            return 2
    project_dir = find_project_dir()
    out_dir = Path(args.out)
    out_dir = out_dir if out_dir.is_absolute() else project_dir / out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.scratch:
        scratch = Path(args.scratch).resolve()
        scratch.mkdir(parents=True, exist_ok=True)
    else:
        scratch = Path(tempfile.mkdtemp(prefix="gpucost-benchmark-"))
    machine = machine_info()
    _say(
        f"machine: {machine['nproc']} CPUs ({machine['cpu_model']}), {machine['mem_total_gb']} GB; "
        f"python {machine['python']}, duckdb {machine['duckdb']}, dbt-core {machine['dbt_core']}, "
        f"dbt-duckdb {machine['dbt_duckdb']}; scratch {scratch}"
    )
    rows: list[dict] = []
    code = 0
    try:
        for step in args.steps:
            for nodes in args.tiers:
                row = benchmark_tier(
                    project_dir, scratch, nodes, args.days, step, args.seed, machine,
                    args.clusters, args.resolution, source,
                )  # fmt: skip
                rows.append(row)
                if not args.keep:
                    folder = tier_folder(nodes, step, row["days"], row["resolution"])
                    shutil.rmtree(scratch / folder, ignore_errors=True)
    except (RuntimeError, ValueError, duckdb.Error) as error:
        # Keep the failed tier's data and logs to look at; report the tiers measured so far.
        print(f"gpucost benchmark: {error}\nScratch data kept in {scratch}", file=sys.stderr)
        code = 1
    if not code and not args.keep and not args.scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    if not rows:
        return code

    add_ratios(rows)
    rows.sort(key=lambda row: (*_kind(row), row["nodes"]))
    csv_path = out_dir / "benchmark.csv"
    write_csv(rows, csv_path)
    plot_path = write_plot(rows, out_dir)
    print()
    print(format_table(rows))
    print()
    for row in rows:
        line = (
            f"{row['nodes']} nodes @ {row['step_seconds']}s {row['resolution']}: full build = "
            f"{row['build_over_floor']:.2f}x floor; incremental = "
            f"{row['incremental_over_full']:.1%} of full"
        )
        if row["growth_data_ratio"] is not None:
            line += (
                f"; vs the previous tier {row['growth_data_ratio']:.2f}x data took "
                f"{row['growth_time_ratio']:.2f}x build time "
                f"({row['growth_time_over_data']:.2f} time per unit of data growth)"
            )
        print(line)
    print(f"\nWrote {csv_path} and {plot_path}")
    if args.keep:
        print(f"Scratch data kept in {scratch}")
    return code
