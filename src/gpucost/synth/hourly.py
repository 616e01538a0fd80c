"""The hourly resolution's rules, and the generator's hourly landing zone
(``MonthConfig.resolution`` ``hourly``): the files ``gpucost collect --resolution hourly`` lands
from a Prometheus holding the raw month, written from the generated samples without landing them.

:func:`hourly_rule` says which aggregate each landed metric takes; the collector turns it into
PromQL (``gpucost.commands.collect.hourly_queries``), :func:`aggregate_hour` into Python. Each hour
``[H, H+1h)`` of a series with samples there gives one sample stamped ``H``; the DCGM group also
gets :data:`DCGM_SECONDS_METRIC` (samples x step per series and hour, the hour's GPU time).
Series carry the ``cluster`` label of their folder (as the backfilled Prometheus's series do,
gpucost.commands.openmetrics); values are rendered as Prometheus's API renders them.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

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
# A piece of a series: pre-rendered ``[t,"v"]`` JSON fragments (what the raw files hold), a
# :class:`Run`, or :data:`Samples`.
Chunk = str | Run | Samples


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
    return chunk


def _run_hours(run: Run) -> Iterator[tuple[int, list[float]]]:
    # a run's samples hour by hour, without making them
    i = 0
    while i < run.count:
        t = run.start + i * run.step
        hour = t - t % HOUR
        after = min(run.count, -(-(hour + HOUR - run.start) // run.step))  # first index past it
        yield hour, [run.value] * (after - i)
        i = after


def _hour_values(chunks: list[Chunk], merged: bool) -> Iterator[tuple[int, list[float]]]:
    """A series' samples by hour (ascending hours, time order within), each hour as its values.
    The chunks of one series are in time order; those of ``merged`` series (the same labels
    twice) are put in time order, as Prometheus holds them as one series."""
    if len(chunks) == 1 and isinstance(chunks[0], Run):
        yield from _run_hours(chunks[0])
        return
    parts = [_arrays(c) for c in chunks]
    times = np.concatenate([t for t, _ in parts]) if parts else np.empty(0, np.int64)
    values = np.concatenate([v for _, v in parts]) if parts else np.empty(0)
    if merged:
        order = np.argsort(times, kind="stable")
        times, values = times[order], values[order]
    elif np.any(times[1:] < times[:-1]):
        raise ValueError("samples out of time order")
    hours = times - times % HOUR
    cuts = [0, *(np.flatnonzero(hours[1:] != hours[:-1]) + 1).tolist(), len(times)]
    listed = values.tolist()
    for a, b in itertools.pairwise(cuts):
        if b > a:
            yield int(hours[a]), listed[a:b]


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
        entry = merged.get(key := series_key(out))
        if entry is None:
            merged[key] = (out, list(chunks), False)
        else:
            merged[key] = (out, [*entry[1], *chunks], True)
    return merged


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
        for key, (labels, chunks, merged) in _series(cluster, series).items():
            values, counts = [], {}
            for h, vs in _hour_values(chunks, merged):
                values.append([h, prom_value(aggregate_hour(rule, vs, step))])
                counts[h] = len(vs) * step
            if not values:
                continue
            landed[metric].append({"metric": {"__name__": metric, **labels}, "values": values})
            if counted:
                first = seconds.setdefault(key, (labels, {}))[1]
                for h, n in counts.items():
                    first.setdefault(h, n)
    if group == "dcgm":
        landed[DCGM_SECONDS_METRIC] = [
            {
                "metric": {"__name__": DCGM_SECONDS_METRIC, **labels},
                "values": [[h, prom_value(float(n))] for h, n in sorted(counts.items())],
            }
            for labels, counts in seconds.values()
        ]
    return landed


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
        text = json.dumps(matrix_document(series), separators=(",", ":"))
        (folder / f"{metric.replace(':', '_')}.json").write_text(text, encoding="utf-8")
    return len(landed)
