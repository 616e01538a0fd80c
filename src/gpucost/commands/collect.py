"""``gpucost collect``: pull the telemetry the warehouse reads from a Prometheus-compatible API.

From Prometheus, Thanos, Mimir or a managed Prometheus into the landing zone, in the layout and file
format the generator writes, so ``gpucost build`` reads them unchanged::

    metrics/dcgm/<cluster>/<YYYY-MM-DD>/<DCGM metric>.json        /api/v1/query_range responses
    metrics/kube/<cluster>/<YYYY-MM-DD>/<kube metric>.json
    metrics/serving/<cluster>/<YYYY-MM-DD>/<metric>.json          --serving: fct_inference_unit_cost
    inventory/kube/<cluster>/pods-<YYYY-MM-DD>.json               kubectl get pods -A -o json
    scheduler/slurm/<cluster>/sacct-<YYYY-MM-DD>.txt              sacct --parsable2

Series are split into clusters by their ``cluster`` label (``--cluster-label``); series
without it land under ``--cluster``. One file per metric, cluster and day; every metric of a group
gets its file for each cluster seen that day (an empty result when it had no series), as the
generator writes them.

Two resolutions:

* ``raw``: the samples themselves, read as range vectors (``m[<window>]`` at ``/api/v1/query``) in
  windows of at most ``--max-points`` samples per series (under Prometheus's 11,000 points), sized
  from the scrape interval (detected, or ``--scrape-interval``). No evaluation grid: a series' last
  sample is not repeated for the 5-minute lookback after it ends (a ``query_range`` would, where the
  TSDB holds no staleness marker, as in backfilled blocks).
* ``hourly``: one sample per series and hour, stamped at the hour's start and computed by PromQL
  over that hour ``[H, H+1h)`` (``hourly_queries``, the one definition, from the rule per metric
  of ``gpucost.synth.hourly.hourly_rule``, which the generator's hourly mode evaluates too): the
  DCGM fields' ``avg_over_time``; ``gpucost_dcgm_sample_seconds_1h``, the seconds each DCGM
  series was scraped (``count_over_time`` x scrape interval), which the warehouse reads as the
  hour's GPU time; the requests' mean over the whole hour (``sum_over_time`` x scrape interval /
  3600: a pod there half the hour asking for 8 GPUs reads 4); ``max_over_time`` of the other
  kube-state-metrics series (presence, capacity, start and completion times). 50x fewer samples
  than one-minute raw ones (docs/collecting.md). A landing zone holds one resolution.

A group's day is complete when every cluster folder of it holds all the group's files, written after
the day ended (plus 10 minutes): the next run skips it (``--force`` collects it again); no state is
kept beside the files. Files are written to a hidden temporary name and renamed.
Authentication comes from the environment: GPUCOST_PROM_TOKEN (bearer) or GPUCOST_PROM_USER and
GPUCOST_PROM_PASSWORD (basic).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from gpucost.synth.generator import DCGM_METRICS, KUBE_METRICS, VOLUME_METRICS
from gpucost.synth.generator_slurm import SACCT_HEADER
from gpucost.synth.hourly import (
    DCGM_SECONDS_METRIC,
    HOUR,
    RESOLUTIONS,
    hourly_rule,
    matrix_document,
    series_key,
)

SECONDS_PER_DAY = 86400
# Prometheus refuses a query_range of more than 11,000 points per series; stay under it.
MAX_POINTS_PER_QUERY = 10_000
# Serving engines' counters (--serving): vLLM, Hugging Face TGI, NVIDIA Triton.
SERVING_METRICS: tuple[str, ...] = (
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "tgi_request_count",
    "tgi_request_success",
    "tgi_request_input_length_sum",
    "tgi_request_generated_tokens_sum",
    "nv_inference_request_success",
    "nv_inference_request_failure",
    "nv_inference_count",
)


class CollectError(Exception):
    """A problem the user can act on: reported as one line, exit code 2."""


@dataclass(frozen=True)
class Group:
    """Metrics landed together under ``metrics/<name>/``."""

    name: str
    metrics: tuple[str, ...]
    # the metric whose samples show the scrape interval
    probe: str


GROUPS: dict[str, Group] = {
    "dcgm": Group("dcgm", DCGM_METRICS, "DCGM_FI_DEV_GPU_UTIL"),
    "kube": Group("kube", KUBE_METRICS + VOLUME_METRICS, "kube_node_info"),
    "serving": Group("serving", SERVING_METRICS, SERVING_METRICS[0]),
}


def file_stem(metric: str) -> str:
    """The landed file's name for a metric (``vllm:prompt_tokens_total`` -> ``vllm_prompt_...``)."""
    return metric.replace(":", "_")


def selector(metric: str, matchers: str = "") -> str:
    """A PromQL selector of ``metric`` (any name, colons included) and the extra label matchers."""
    name = metric.replace("\\", "\\\\").replace('"', '\\"')
    extra = f",{matchers}" if matchers else ""
    return f'{{__name__="{name}"{extra}}}'


def hourly_queries(group: Group, interval: float, matchers: str = "") -> list[tuple[str, str]]:
    """(landed metric name, PromQL over the hour ending at the evaluation time) for a group: the one
    definition of what the hourly resolution computes (docs/collecting.md prints them as rules)."""
    out: list[tuple[str, str]] = []
    for metric in group.metrics:
        sel = f"{selector(metric, matchers)}[1h]"
        # the rule is gpucost.synth.hourly.hourly_rule's (the generator evaluates it in Python)
        query = {
            "avg": f"avg_over_time({sel})",
            "last": f"last_over_time({sel})",
            "mean": f"sum_over_time({sel}) * {interval:g} / {HOUR}",
            "max": f"max_over_time({sel})",
        }[hourly_rule(group.name, metric)]
        out.append((metric, query))
    if group.name == "dcgm":
        counts = " or ".join(f"count_over_time({selector(m, matchers)}[1h])" for m in group.metrics)
        out.append((DCGM_SECONDS_METRIC, f"({counts}) * {interval:g}"))
    return out


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------


@dataclass
class PrometheusClient:
    """The HTTP API of a Prometheus-compatible server, with retries and backoff (urllib3 Retry)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    auth: tuple[str, str] | None = None
    verify: bool | str = True
    timeout: float = 60.0
    retries: int = 5
    backoff: float = 0.5
    session: requests.Session = field(init=False)

    def __post_init__(self) -> None:
        self.url = self.url.rstrip("/")
        retry = Retry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            backoff_factor=self.backoff,
            status_forcelist=(429, 500, 502, 503, 504),
            allowed_methods=frozenset({"GET", "POST"}),
            raise_on_status=False,
        )
        self.session = requests.Session()
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        self.session.mount("https://", HTTPAdapter(max_retries=retry))
        self.session.headers.update(self.headers)
        if self.auth:
            self.session.auth = self.auth
        self.session.verify = self.verify

    def _post(self, endpoint: str, params: dict[str, str]) -> dict[str, Any]:
        where = f"{self.url}{endpoint}"
        try:
            response = self.session.post(where, data=params, timeout=self.timeout)
        except requests.exceptions.SSLError as error:
            raise CollectError(
                f"TLS error talking to {self.url} ({_reason(error)}); pass --ca-file with the "
                "server's CA, or --insecure to skip verification"
            ) from None
        except requests.exceptions.ConnectionError as error:
            raise CollectError(
                f"cannot reach {self.url} ({_reason(error)}); check --url and that the server is up"
            ) from None
        except requests.exceptions.Timeout:
            raise CollectError(
                f"{self.url} did not answer within {self.timeout:g}s; raise --timeout or narrow "
                "the query (--match)"
            ) from None
        except requests.exceptions.RetryError as error:
            raise CollectError(f"{where} kept failing after retries ({_reason(error)})") from None
        if response.status_code in (401, 403):
            raise CollectError(
                f"authentication failed at {self.url} (HTTP {response.status_code}); set "
                "GPUCOST_PROM_TOKEN, or GPUCOST_PROM_USER and GPUCOST_PROM_PASSWORD (and --header "
                "X-Scope-OrgID:<tenant> for Mimir)"
            )
        try:
            body = response.json()
        except ValueError:
            raise CollectError(
                f"{where} answered HTTP {response.status_code} with something that is not a "
                "Prometheus API response; check --url (the server's base URL, without /api/v1)"
            ) from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else None
            raise CollectError(
                f"{where} refused the query (HTTP {response.status_code}): {error or body}"
            )
        return body

    def query_range(self, query: str, start: float, end: float, step: float) -> list[dict]:
        body = self._post(
            "/api/v1/query_range",
            {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"},
        )
        return body["data"]["result"]

    def query(self, query: str, at: float) -> dict[str, Any]:
        return self._post("/api/v1/query", {"query": query, "time": f"{at:.3f}"})["data"]


def _reason(error: Exception) -> str:
    text = str(error.args[0] if error.args else error)
    return text.splitlines()[0][:200]


# --------------------------------------------------------------------------------------------
# Collection
# --------------------------------------------------------------------------------------------


def windows(start: int, end: int, interval: int, max_points: int) -> list[tuple[int, int]]:
    """[from, to) windows covering [start, end), each holding at most ``max_points`` samples of a
    series scraped every ``interval`` seconds."""
    span = interval * max(1, max_points - 1)
    return [(first, min(first + span, end)) for first in range(start, end, span)]


def detect_interval(client: PrometheusClient, group: Group, matchers: str, days: list[date]) -> int:
    """The scrape interval of a group's probe metric: the smallest gap between raw samples in an
    hour (rounded to a second), tried at noon of each day until one has samples."""
    probes = [group.probe, *(m for m in group.metrics if m != group.probe)]
    for day, probe in ((day, probe) for day in reversed(days) for probe in probes):
        at = _epoch(day) + SECONDS_PER_DAY // 2
        data = client.query(f"{selector(probe, matchers)}[1h]", at)
        gaps = [
            float(b[0]) - float(a[0])
            for series in data.get("result", [])[:50]
            for a, b in zip(series.get("values", []), series.get("values", [])[1:], strict=False)
        ]
        positive = [g for g in gaps if g > 0]
        if positive:
            return max(1, round(min(positive)))
    raise CollectError(
        f"no {group.name} samples ({group.probe}, ...) at noon of the days asked for to detect "
        "the scrape interval: check --url / --match / the dates, or pass --scrape-interval"
    )


def _epoch(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())


def _timestamp(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _collect_raw(
    client: PrometheusClient, metric: str, matchers: str, day_start: int, step: int, max_points: int
) -> dict[tuple, dict]:
    # the samples themselves: a range vector m[window] read at the window's end - 1 ms, kept when in
    # [from, to) (Prometheus 2.x's closed ranges also return a sample at from - 1 ms); no evaluation
    # grid, so no lookback repeating a series' last sample past its end
    merged: dict[tuple, dict] = {}
    for first, last in windows(day_start, day_start + SECONDS_PER_DAY, step, max_points):
        data = client.query(f"{selector(metric, matchers)}[{last - first}s]", last - 0.001)
        for series in data.get("result") or []:
            labels = series.get("metric") or {}
            entry = merged.setdefault(series_key(labels), {"metric": labels, "values": []})
            entry["values"].extend(
                [_timestamp(float(t)), v]
                for t, v in series.get("values") or []
                if first <= float(t) < last
            )
    return {key: series for key, series in merged.items() if series["values"]}


def _collect_hourly(
    client: PrometheusClient, name: str, query: str, day_start: int
) -> dict[tuple, dict]:
    # evaluated at H + 1h - 1ms, the range [1h] covers the hour [H, H+1h) (Prometheus 3's left-open
    # ranges exactly; 2.x's closed ranges also take a sample at exactly H - 1ms)
    first = day_start + HOUR - 0.001
    last = day_start + SECONDS_PER_DAY - 0.001
    merged: dict[tuple, dict] = {}
    for series in client.query_range(query, first, last, HOUR):
        labels = {"__name__": name, **(series.get("metric") or {})}
        values = [[math.floor(float(t)) // HOUR * HOUR, v] for t, v in series["values"]]
        merged[series_key(labels)] = {"metric": labels, "values": values}
    return merged


def _write_json_atomic(path: Path, document: Any) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    text = json.dumps(document, separators=(",", ":"))
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return len(text)


def _write_text_atomic(path: Path, text: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return len(text)


@dataclass
class Options:
    landing: Path
    start: date
    end: date  # exclusive
    resolution: str = "raw"
    groups: tuple[str, ...] = ("dcgm", "kube")
    matchers: str = ""
    cluster_label: str = "cluster"
    cluster: str = "default"
    scrape_interval: int | None = None
    max_points: int = MAX_POINTS_PER_QUERY
    force: bool = False
    settle_seconds: int = 600
    progress: bool = True


@dataclass
class Summary:
    days_collected: int = 0
    days_skipped: int = 0
    files: int = 0
    series: int = 0
    samples: int = 0
    bytes: int = 0
    clusters: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)

    def text(self, options: Options) -> str:
        lines = [
            f"Landed {self.files} files ({self.series} series, {self.samples} samples, "
            f"{self.bytes / 1e6:.1f} MB) at {options.resolution} resolution for "
            f"{self.days_collected} group-days; {self.days_skipped} complete group-days skipped; "
            f"clusters: {', '.join(sorted(self.clusters)) or 'none'}; into {options.landing}",
        ]
        return "\n".join(lines + self.notes)


def _day_done(landing: Path, group: str, day: date, names: list[str], settled_at: float) -> bool:
    """A group's day is complete when each of its cluster folders holds every file of the group and
    the oldest was written after the day ended (``settled_at``): no state kept beside the files."""
    folders = sorted(
        p for p in (landing / "metrics" / group).glob(f"*/{day.isoformat()}") if p.is_dir()
    )
    if not folders:
        return False
    for folder in folders:
        for name in names:
            path = folder / f"{file_stem(name)}.json"
            if not path.is_file() or path.stat().st_mtime < settled_at:
                return False
    return True


def _check_one_resolution(landing: Path, resolution: str) -> None:
    """A landing zone holds one resolution: hourly DCGM folders carry the seconds file."""
    seconds = f"{DCGM_SECONDS_METRIC}.json"
    for folder in sorted((landing / "metrics" / "dcgm").glob("*/*")):
        if not folder.is_dir() or not any(folder.glob("*.json")):
            continue
        found = "hourly" if (folder / seconds).is_file() else "raw"
        if found != resolution:
            raise CollectError(
                f"{folder} holds {found} data; a landing zone holds one resolution: collect "
                f"{resolution} into another one"
            )


def _remove_partial_files(landing: Path) -> None:
    """Temporary files a killed run left behind (never read: a build reads *.json only)."""
    for path in (landing / "metrics").glob("**/.*.partial"):
        path.unlink(missing_ok=True)


def collect_metrics(client: PrometheusClient, options: Options, summary: Summary) -> None:
    """Land every day of ``options`` for each group (see the module docstring)."""
    from tqdm import tqdm

    days = [options.start + timedelta(days=d) for d in range((options.end - options.start).days)]
    _check_one_resolution(options.landing, options.resolution)
    _remove_partial_files(options.landing)
    for group_name in options.groups:
        group = GROUPS[group_name]
        # the files a day of this group holds per cluster (the interval does not change the names)
        names = [name for name, _ in _queries(group, options, 60)]
        todo = []
        for day in days:
            settled_at = _epoch(day) + SECONDS_PER_DAY + options.settle_seconds
            if not options.force and _day_done(options.landing, group_name, day, names, settled_at):
                summary.days_skipped += 1
            else:
                todo.append(day)
        if not todo:
            continue
        try:
            interval = options.scrape_interval or detect_interval(
                client, group, options.matchers, todo
            )
        except CollectError:
            if group_name != "serving":
                raise
            summary.notes.append("no serving metrics (vLLM, TGI, Triton) found: none landed")
            continue
        queries = _queries(group, options, interval)
        bar = tqdm(
            total=len(todo) * len(queries),
            desc=f"{group_name} ({options.resolution}, step {interval}s)",
            unit="query",
            disable=not options.progress,
            file=sys.stderr,
        )
        for day in todo:
            day_start = _epoch(day)
            by_cluster: dict[str, dict[str, list[dict]]] = {}
            for name, query in queries:
                if options.resolution == "raw":
                    merged = _collect_raw(
                        client, query, options.matchers, day_start, interval, options.max_points
                    )
                else:
                    merged = _collect_hourly(client, name, query, day_start)
                for series in merged.values():
                    cluster = series["metric"].get(options.cluster_label) or options.cluster
                    by_cluster.setdefault(cluster, {}).setdefault(name, []).append(series)
                bar.update(1)
            for cluster, per_metric in sorted(by_cluster.items()):
                folder = Path("metrics") / group_name / _safe(cluster) / day.isoformat()
                for name, _ in queries:
                    series = per_metric.get(name, [])
                    relative = folder / f"{file_stem(name)}.json"
                    summary.bytes += _write_json_atomic(
                        options.landing / relative, matrix_document(series)
                    )
                    summary.files += 1
                    summary.series += len(series)
                    summary.samples += sum(len(s["values"]) for s in series)
                summary.clusters.add(cluster)
            summary.days_collected += 1
        bar.close()


def _queries(group: Group, options: Options, interval: float) -> list[tuple[str, str]]:
    """(landed metric name, query) of a group at the options' resolution."""
    if options.resolution == "raw":
        return [(metric, metric) for metric in group.metrics]
    return hourly_queries(group, interval, options.matchers)


def _safe(name: str) -> str:
    """A label value as one folder name (no separators, not . or ..)."""
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return cleaned if cleaned.strip(".") else "_"


def collect_kube_snapshot(
    landing: Path, cluster: str, context: str | None, run: Callable = subprocess.run
) -> str:
    """`kubectl get pods -A -o json` into inventory/kube/<cluster>/pods-<today>.json; one line."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return "kubectl not found on PATH: pod spec snapshot not collected (inventory/kube/)"
    command = [kubectl, "get", "pods", "--all-namespaces", "-o", "json"]
    if context:
        command += ["--context", context]
    result = run(command, capture_output=True, text=True, check=False, timeout=300)
    if result.returncode != 0:
        first = (result.stderr or "").strip().splitlines()[:1]
        return f"kubectl failed (exit {result.returncode}): {first[0] if first else 'no output'}"
    try:
        json.loads(result.stdout)
    except ValueError:
        return "kubectl printed something that is not JSON: pod spec snapshot not landed"
    today = datetime.now(UTC).date().isoformat()
    path = landing / "inventory" / "kube" / _safe(cluster) / f"pods-{today}.json"
    _write_text_atomic(path, result.stdout)
    return f"pod spec snapshot: {path.relative_to(landing)}"


def collect_sacct(
    landing: Path, cluster: str, days: list[date], run: Callable = subprocess.run
) -> str:
    """``sacct --parsable2`` per day (jobs of that day, the fields the warehouse reads) into
    scheduler/slurm/<cluster>/sacct-<day>.txt; one line."""
    sacct = shutil.which("sacct")
    if sacct is None:
        return "sacct not found on PATH: Slurm accounting not collected (scheduler/slurm/)"
    fields = ",".join(SACCT_HEADER.split("|"))
    landed = 0
    for day in days:
        command = [
            sacct, "--allusers", "--parsable2", f"--format={fields}",
            f"--starttime={day.isoformat()}T00:00:00",
            f"--endtime={(day + timedelta(days=1)).isoformat()}T00:00:00",
        ]  # fmt: skip
        result = run(command, capture_output=True, text=True, check=False, timeout=600)
        if result.returncode != 0:
            first = (result.stderr or "").strip().splitlines()[:1]
            return f"sacct failed (exit {result.returncode}): {first[0] if first else 'no output'}"
        if len(result.stdout.strip().splitlines()) > 1:
            path = landing / "scheduler" / "slurm" / _safe(cluster) / f"sacct-{day.isoformat()}.txt"
            _write_text_atomic(path, result.stdout)
            landed += 1
    return f"sacct: {landed} day(s) landed under scheduler/slurm/{_safe(cluster)}/"


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _parse_day(value: str, what: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CollectError(f"{what} must be a date, YYYY-MM-DD (got {value!r})") from None


def _headers(values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise CollectError(f"--header must be 'Name: value' (got {value!r})")
        out[name.strip()] = content.strip()
    return out


def client_from_args(args: argparse.Namespace) -> PrometheusClient:
    if not args.url.startswith(("http://", "https://")):
        raise CollectError(f"--url must start with http:// or https:// (got {args.url!r})")
    headers = _headers(args.header or [])
    token = os.environ.get("GPUCOST_PROM_TOKEN")
    user = os.environ.get("GPUCOST_PROM_USER")
    if token and user:
        raise CollectError("set GPUCOST_PROM_TOKEN or GPUCOST_PROM_USER, not both")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    auth = (user, os.environ.get("GPUCOST_PROM_PASSWORD", "")) if user else None
    if args.ca_file and not Path(args.ca_file).is_file():
        raise CollectError(f"--ca-file {args.ca_file} does not exist")
    verify: bool | str = False if args.insecure else (args.ca_file or True)
    return PrometheusClient(
        args.url, headers=headers, auth=auth, verify=verify, timeout=args.timeout,
        retries=args.retries,
    )  # fmt: skip


def options_from_args(args: argparse.Namespace) -> Options:
    today = datetime.now(UTC).date()
    start = _parse_day(args.start, "--start") if args.start else today - timedelta(days=1)
    end = _parse_day(args.end, "--end") if args.end else start + timedelta(days=args.days)
    if end <= start:
        raise CollectError(f"--end ({end}) must be after --start ({start}); --end is exclusive")
    if args.scrape_interval is not None and args.scrape_interval <= 0:
        raise CollectError("--scrape-interval must be a positive number of seconds")
    if not 2 <= args.max_points <= 11_000:
        raise CollectError("--max-points must be within [2, 11000] (Prometheus's limit is 11,000)")
    groups = ("dcgm", "kube", "serving") if args.serving else ("dcgm", "kube")
    return Options(
        landing=Path(args.landing),
        start=start,
        end=end,
        resolution=args.resolution,
        groups=groups,
        matchers=args.match or "",
        cluster_label=args.cluster_label,
        cluster=args.cluster,
        scrape_interval=args.scrape_interval,
        max_points=args.max_points,
        force=args.force,
        progress=not args.no_progress,
    )


def cmd_collect(args: argparse.Namespace) -> int:
    try:
        if args.print_recording_rules:
            print(recording_rules(args.scrape_interval or 60, args.match or ""), end="")
            return 0
        if not args.url:
            raise CollectError(
                "--url is required (or $GPUCOST_PROM_URL), e.g. http://prometheus:9090"
            )
        options = options_from_args(args)
        client = client_from_args(args)
        options.landing.mkdir(parents=True, exist_ok=True)
        summary = Summary()
        collect_metrics(client, options, summary)
        if args.kube_snapshot:
            summary.notes.append(collect_kube_snapshot(options.landing, args.cluster, args.context))
        if args.sacct:
            days = [
                options.start + timedelta(days=d) for d in range((options.end - options.start).days)
            ]
            summary.notes.append(collect_sacct(options.landing, args.slurm_cluster, days))
        if args.serving:
            summary.notes.append(
                "serving metrics landed in metrics/serving/: fct_inference_unit_cost reads them"
            )
    except CollectError as error:
        print(f"gpucost collect: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"gpucost collect: cannot write the landing zone: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "gpucost collect: interrupted; complete days are kept, run again to resume",
            file=sys.stderr,
        )
        return 130
    print(summary.text(options))
    return 0


def recording_rules(interval: float, matchers: str = "") -> str:
    """The hourly resolution's queries as a Prometheus rule file (docs/collecting.md)."""
    import yaml

    rules = []
    for group in GROUPS.values():
        for name, query in hourly_queries(group, interval, matchers):
            record = f"gpucost:{file_stem(name)}:1h"
            rules.append({"record": record, "expr": query})
    return yaml.safe_dump(
        {"groups": [{"name": "gpucost-hourly", "interval": "1h", "rules": rules}]},
        sort_keys=False,
        width=200,
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "collect",
        help="pull DCGM / kube-state-metrics series from a Prometheus API into the landing zone",
        description=__doc__.split("\n\n")[0],
    )
    add = parser.add_argument
    add(
        "--url",
        default=os.environ.get("GPUCOST_PROM_URL"),
        help="server base URL, e.g. http://prometheus:9090 (default $GPUCOST_PROM_URL)",
    )
    add(
        "--landing",
        default=os.environ.get("GPUCOST_LANDING_DIR", "landing"),
        help="landing zone (default $GPUCOST_LANDING_DIR or landing)",
    )
    add("--start", help="first day, YYYY-MM-DD (default yesterday, UTC)")
    add("--end", help="day after the last, YYYY-MM-DD (exclusive)")
    add("--days", type=int, default=1, help="days from --start when no --end")
    add(
        "--resolution",
        choices=RESOLUTIONS,
        default="raw",
        help="raw samples, or one PromQL aggregate per series and hour",
    )
    add(
        "--scrape-interval",
        type=int,
        help="seconds between scrapes (default: detected from the samples)",
    )
    add("--match", help="extra label matchers for every query, e.g. 'cluster=\"gpu-east\"'")
    add(
        "--cluster-label",
        default="cluster",
        help="label naming a series' cluster (default cluster)",
    )
    add(
        "--cluster",
        default="default",
        help="cluster folder for series without that label, and of kubectl's snapshot",
    )
    add(
        "--serving",
        action="store_true",
        help="also land vLLM / TGI / Triton counters under metrics/serving/",
    )
    add(
        "--header",
        action="append",
        help="extra HTTP header 'Name: value' (repeatable), e.g. 'X-Scope-OrgID: acme'",
    )
    add("--ca-file", help="CA bundle to verify the server's TLS certificate")
    add("--insecure", action="store_true", help="do not verify TLS certificates")
    add("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    add("--retries", type=int, default=5, help="retries per request (default 5)")
    add(
        "--max-points",
        type=int,
        default=MAX_POINTS_PER_QUERY,
        help="points per series per query (default 10000; Prometheus allows 11000)",
    )
    add("--force", action="store_true", help="collect complete days again")
    add("--no-progress", action="store_true", help="no progress bar")
    add(
        "--kube-snapshot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="land `kubectl get pods -A -o json` when kubectl exists (default on)",
    )
    add("--context", help="kubectl context of the snapshot")
    add(
        "--sacct",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="land `sacct --parsable2` per day when sacct exists (default on)",
    )
    add("--slurm-cluster", default="slurm", help="cluster folder of sacct dumps")
    add(
        "--print-recording-rules",
        action="store_true",
        help="print the hourly queries as a Prometheus rule file and exit",
    )
    parser.set_defaults(func=cmd_collect)
