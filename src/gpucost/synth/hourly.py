"""The hourly resolution's rules, and the generator's hourly landing zone
(``MonthConfig.resolution`` ``hourly``): the files ``gpucost collect --resolution hourly`` lands
from a Prometheus holding the raw month, written from the generated samples without landing them.

:func:`hourly_rule` says which aggregate each landed metric takes; the collector turns it into
PromQL (``gpucost.commands.collect.hourly_queries``), :func:`aggregate_hour` into Python. Each hour
``[H, H+1h)`` of a series with samples there gives one sample stamped ``H``; the DCGM group also
gets :data:`DCGM_SECONDS_METRIC` (samples x step per series and hour, the hour's GPU time).
Series carry the ``cluster`` label of their folder (as the backfilled Prometheus's series do,
gpucost.commands.openmetrics); values are rendered as Prometheus's API renders them.

The generator hands each series over as :data:`Chunk` s: the raw files' JSON fragments, or, on
the hourly path, their unrendered twins (DCGM samples as arrays, gpucost.synth.telemetry_arrays;
kube-state-metrics series as :class:`Run` s of one value; serving counters as arrays). Every
chunk is read as the values its fragment would parse to, so the hours, groups and aggregates are
the same whichever form came (tests/python/test_hourly_fast.py); :func:`aggregate_hour` is the
one place each rule is evaluated (per hour group; for a run, once per value and sample count).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from gpucost.synth.reference import DCGM_METRICS

HOUR = 3600
RESOLUTIONS = ("raw", "hourly")
# The seconds each DCGM series was scraped in an hour (hourly resolution only): the GPU time.
DCGM_SECONDS_METRIC = "gpucost_dcgm_sample_seconds_1h"
# kube-state-metrics series whose value is an amount held over time (their mean over the hour).
REQUEST_METRICS = frozenset({"kube_pod_container_resource_requests"})


def hourly_rule(group: str, metric: str) -> str:
    """The aggregate over the hour of a landed metric of a group (``dcgm``, ``kube``, ``serving``):
    ``avg`` (DCGM fields), ``last`` (serving counters), ``mean`` (requests: the sum x step / 3600,
    an amount held half the hour reads half) or ``max`` (the other kube-state-metrics series)."""
    if group == "dcgm":
        return "avg"
    if group == "serving":
        return "last"
    if metric in REQUEST_METRICS:
        return "mean"
    return "max"


def aggregate_hour(rule: str, values: list[float], step: float) -> float:
    """One hour of a series' samples (time order, at least one) under :func:`hourly_rule`'s rule.

    It mirrors ``gpucost.commands.collect.hourly_queries`` (``avg_over_time``, ``last_over_time``,
    ``sum_over_time(...) * step / 3600`` in that order of operations, ``max_over_time``): the
    generator has the samples in memory and no PromQL engine, so the same rules are evaluated here
    instead of re-using the queries. Sums are exact (``math.fsum``); Prometheus's running sums can
    differ in the last bits."""
    if rule == "avg":
        return math.fsum(values) / len(values)
    if rule == "last":
        return values[-1]
    if rule == "mean":
        return math.fsum(values) * step / HOUR
    if rule == "max":
        return max(values)
    raise ValueError(f"unknown hourly rule {rule!r}")


def prom_value(value: float) -> str:
    """A sample value as Prometheus's HTTP API writes it (Go's ``FormatFloat(v, 'f', -1, 64)``:
    the shortest exact decimal, no exponent, no trailing ``.0``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if "e" in text:
        text = format(Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def series_key(labels: dict[str, str]) -> tuple:
    """The order Prometheus (and the collector) list series in: by their sorted labels."""
    return tuple(sorted(labels.items()))


def matrix_document(series: Iterable[dict]) -> dict[str, Any]:
    """A ``query_range`` response holding ``series`` ({"metric", "values"}), in series order."""
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": sorted(series, key=lambda s: series_key(s["metric"])),
        },
    }


@dataclass(frozen=True, slots=True)
class Run:
    """``count`` samples of one ``value``, ``step`` seconds apart from ``start``: a constant series
    (kube-state-metrics' ``1``, a request, a start time) without a string or float per sample."""

    start: int
    step: int
    count: int
    value: float


# A series' samples in time order: times (int64) and values (float64).
Samples = tuple[np.ndarray, np.ndarray]


class SampleSource(Protocol):
    """Samples made on demand (gpucost.synth.telemetry_arrays fills a cluster-day's at once)."""

    def samples(self) -> Samples: ...


# A piece of a series: pre-rendered ``[t,"v"]`` JSON fragments (what the raw files hold), a
# :class:`Run`, or samples (arrays, or a source of them).
Chunk = str | Run | Samples | SampleSource
# One landed series of a cluster-day: (its key, labels, hours, value strings, samples per hour).
_Landed = tuple[tuple, dict[str, str], list[int], list[str], list[int]]


def run_chunks(start: int, step: int, count: int, value: str) -> list[Run]:
    """The hourly twin of a rendered run of ``count`` samples of ``value`` (nothing when none):
    the chunks :func:`hourly_group_day` reads as it would read the fragments."""
    return [Run(start, step, count, float(value))] if count > 0 else []


def _arrays(chunk: Chunk) -> Samples:
    if isinstance(chunk, Run):
        times = chunk.start + chunk.step * np.arange(chunk.count, dtype=np.int64)
        return times, np.full(chunk.count, chunk.value)
    if isinstance(chunk, str):  # [t,"v"],...: the generator writes whole-second times
        pairs = json.loads(f"[{chunk}]") if chunk else []
        times = np.array([t for t, _ in pairs], dtype=np.int64)
        return times, np.array([float(v) for _, v in pairs], dtype=np.float64)
    if isinstance(chunk, tuple):
        return chunk
    return chunk.samples()


def _series_samples(chunks: list[Chunk], merged: bool) -> Samples:
    """A series' samples in time order. The chunks of one series are in time order; those of
    ``merged`` series (the same labels twice) are put in time order, as Prometheus holds them as
    one series."""
    parts = [_arrays(c) for c in chunks]
    if len(parts) == 1:
        times, values = parts[0]
    else:
        times = np.concatenate([t for t, _ in parts]) if parts else np.empty(0, np.int64)
        values = np.concatenate([v for _, v in parts]) if parts else np.empty(0)
    if merged:
        order = np.argsort(times, kind="stable")
        return times[order], values[order]
    if np.any(times[1:] < times[:-1]):
        raise ValueError("samples out of time order")
    return times, values


def _sample_hours(
    items: list[tuple[tuple, dict[str, str], list[Chunk], bool]], rule: str, step: int
) -> Iterator[_Landed]:
    """Series' samples hour by hour, all series of a metric at once: the hour groups are found
    with numpy, each group's aggregate is :func:`aggregate_hour` of its values."""
    parts = [_series_samples(chunks, merged) for _, _, chunks, merged in items]
    if not parts:
        return
    times = np.concatenate([t for t, _ in parts])
    if not len(times):
        return
    series = np.repeat(np.arange(len(parts)), [len(t) for t, _ in parts])
    hours = times - times % HOUR
    new = np.ones(len(times), dtype=bool)
    new[1:] = (series[1:] != series[:-1]) | (hours[1:] != hours[:-1])
    starts = np.flatnonzero(new)
    bounds = np.append(starts, len(times)).tolist()
    listed = np.concatenate([v for _, v in parts]).tolist()
    texts = [
        prom_value(aggregate_hour(rule, listed[a:b], step)) for a, b in itertools.pairwise(bounds)
    ]
    counts = np.diff(bounds).tolist()
    group_hours = hours[starts].tolist()
    cut = np.searchsorted(series[starts], np.arange(len(parts) + 1)).tolist()
    for (key, labels, _, _), a, b in zip(items, cut[:-1], cut[1:], strict=True):
        if b > a:
            yield key, labels, group_hours[a:b], texts[a:b], counts[a:b]


def _run_hours(
    items: list[tuple[tuple, dict[str, str], Run]], rule: str, step: int
) -> Iterator[_Landed]:
    """Runs hour by hour without making their samples: an hour's aggregate is
    :func:`aggregate_hour` of its count of the run's value, once per value and count."""
    texts: dict[tuple[float, int], str] = {}
    for key, labels, run in items:
        hours, values, counts = [], [], []
        i = 0
        while i < run.count:
            t = run.start + i * run.step
            hour = t - t % HOUR
            after = min(run.count, -(-(hour + HOUR - run.start) // run.step))  # first index past
            n = after - i
            text = texts.get((run.value, n))
            if text is None:
                text = texts[run.value, n] = prom_value(aggregate_hour(rule, [run.value] * n, step))
            hours.append(hour)
            values.append(text)
            counts.append(n)
            i = after
        if hours:
            yield key, labels, hours, values, counts


def _series(
    cluster: str, series: list[tuple[dict[str, str], list[Chunk]]]
) -> dict[tuple, tuple[dict[str, str], list[Chunk], bool]]:
    # a metric's series of one cluster-day by their labels (without __name__, with the folder's
    # cluster as the backfill gives it, empty values dropped as Prometheus drops them), with their
    # chunks and whether the same labels came more than once (one series then, as in Prometheus)
    merged: dict[tuple, tuple[dict[str, str], list[Chunk], bool]] = {}
    for labels, chunks in series:
        kept = {"cluster": cluster, **{k: v for k, v in labels.items() if k != "__name__" and v}}
        out = dict(sorted(kept.items()))
        entry = merged.get(key := tuple(out.items()))  # series_key(out): out is sorted
        if entry is None:
            merged[key] = (out, list(chunks), False)
        else:
            merged[key] = (out, [*entry[1], *chunks], True)
    return merged


def _landed(cluster: str, series: list, rule: str, step: int) -> Iterator[_Landed]:
    # a metric's series of a cluster-day hour by hour: single runs apart, the rest as samples
    runs, rest = [], []
    for key, (labels, chunks, merged) in _series(cluster, series).items():
        if len(chunks) == 1 and isinstance(chunks[0], Run):
            runs.append((key, labels, chunks[0]))
        else:
            rest.append((key, labels, chunks, merged))
    yield from _run_hours(runs, rule, step)
    yield from _sample_hours(rest, rule, step)


def hourly_group_day(
    group: str,
    cluster: str,
    by_metric: dict[str, list[tuple[dict[str, str], list[Chunk]]]],
    step: int,
) -> dict[str, list[dict]]:
    """One cluster-day of a group's raw series ({metric: [(labels, chunks)]}, every metric of the
    group; chunks as :data:`Chunk`: the raw files' fragments or their unrendered twins) as the
    collector lands them hourly: {landed metric: [{"metric": labels, "values": [[hour, value
    string], ...]}]}, the DCGM group with :data:`DCGM_SECONDS_METRIC` too:
    ``(count_over_time(m1[1h]) or count_over_time(m2[1h]) ...) * step``, i.e. per label set and
    hour the first DCGM metric's count that has one."""
    landed: dict[str, list[dict]] = {}
    seconds: dict[tuple, tuple[dict[str, str], dict[int, int]]] = {}
    for metric, series in by_metric.items():
        rule = hourly_rule(group, metric)
        landed[metric] = []
        counted = group == "dcgm" and metric in DCGM_METRICS
        for key, labels, hours, texts, counts in _landed(cluster, series, rule, step):
            values = [[h, text] for h, text in zip(hours, texts, strict=True)]
            landed[metric].append({"metric": {"__name__": metric, **labels}, "values": values})
            if counted:
                first = seconds.setdefault(key, (labels, {}))[1]
                for h, n in zip(hours, counts, strict=True):
                    first.setdefault(h, n * step)
    if group == "dcgm":
        landed[DCGM_SECONDS_METRIC] = [
            {
                "metric": {"__name__": DCGM_SECONDS_METRIC, **labels},
                "values": [[h, prom_value(float(n))] for h, n in sorted(counts.items())],
            }
            for labels, counts in seconds.values()
        ]
    return landed


def matrix_text(series: list[dict]) -> str:
    """``json.dumps(matrix_document(series), separators=(",", ":"))``, written a series at a time:
    the values of landed series are ``[int, str]`` pairs whose strings need no escaping
    (:func:`prom_value`'s), so each pair is formatted directly."""
    head, tail = json.dumps(matrix_document([]), separators=(",", ":")).split("[]")
    parts = []
    for s in matrix_document(series)["data"]["result"]:
        labels = json.dumps(s["metric"], separators=(",", ":"))
        values = ",".join([f'[{h},"{v}"]' for h, v in s["values"]])
        parts.append(f'{{"metric":{labels},"values":[{values}]}}')
    return f"{head}[{','.join(parts)}]{tail}"


def write_hourly_group_day(
    folder: Path,
    group: str,
    cluster: str,
    by_metric: dict[str, list[tuple[dict[str, str], list[Chunk]]]],
    step: int,
) -> int:
    """Write :func:`hourly_group_day` into ``folder`` as the collector writes its files (one
    ``query_range`` response per landed metric); returns the number of files written."""
    folder.mkdir(parents=True, exist_ok=True)
    landed = hourly_group_day(group, cluster, by_metric, step)
    for metric, series in landed.items():
        text = matrix_text(series)
        (folder / f"{metric.replace(':', '_')}.json").write_text(text, encoding="utf-8")
    return len(landed)
