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

import json
import math
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

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


def _samples(fragments: list[str]) -> list[list]:
    # [[t, "v"], ...]: the generator writes whole-second times, read back as ints
    text = ",".join([f for f in fragments if f])
    return json.loads(f"[{text}]") if text else []


def _hours(
    cluster: str, series: list[tuple[dict[str, str], list[str]]]
) -> dict[tuple, tuple[dict[str, str], dict[int, list[float]]]]:
    # a metric's series of one cluster-day by their labels (without __name__, with the folder's
    # cluster as the backfill gives it, empty values dropped as Prometheus drops them), each
    # with its samples by hour (time order); series of the same labels are one, as in Prometheus
    merged: dict[tuple, tuple[dict[str, str], list[list]]] = {}
    for labels, fragments in series:
        kept = {"cluster": cluster, **{k: v for k, v in labels.items() if k != "__name__" and v}}
        out = dict(sorted(kept.items()))
        entry = merged.get(key := series_key(out))
        if entry is None:
            merged[key] = (out, _samples(fragments))
        else:  # the same labels twice: one series, in time order
            entry[1].extend(_samples(fragments))
            entry[1].sort(key=lambda sample: sample[0])
    result = {}
    for key, (labels, samples) in merged.items():
        hours: dict[int, list[float]] = {}
        current, values, last = -1, [], -1
        for t, v in samples:
            if t < last:
                raise ValueError(f"samples out of time order in {labels}")
            last = t
            if t - t % HOUR != current:
                current = t - t % HOUR
                values = hours.setdefault(current, [])
            values.append(float(v))
        if hours:
            result[key] = (labels, hours)
    return result


def hourly_group_day(
    group: str,
    cluster: str,
    by_metric: dict[str, list[tuple[dict[str, str], list[str]]]],
    step: int,
) -> dict[str, list[dict]]:
    """One cluster-day of a group's raw series ({metric: [(labels, pre-rendered ``[t,"v"]``
    fragments)]}, every metric of the group) as the collector lands them hourly: {landed metric:
    [{"metric": labels, "values": [[hour, value string], ...]}]}, the DCGM group with
    :data:`DCGM_SECONDS_METRIC` too: ``(count_over_time(m1[1h]) or count_over_time(m2[1h]) ...)
    * step``, i.e. per label set and hour the first DCGM metric's count that has one."""
    landed: dict[str, list[dict]] = {}
    seconds: dict[tuple, tuple[dict[str, str], dict[int, float]]] = {}
    for metric, series in by_metric.items():
        rule = hourly_rule(group, metric)
        landed[metric] = []
        for key, (labels, hours) in _hours(cluster, series).items():
            values = [
                [h, prom_value(aggregate_hour(rule, vs, step))] for h, vs in sorted(hours.items())
            ]
            landed[metric].append({"metric": {"__name__": metric, **labels}, "values": values})
            if group == "dcgm" and metric in DCGM_METRICS:
                counts = seconds.setdefault(key, (labels, {}))[1]
                for h, vs in hours.items():
                    counts.setdefault(h, len(vs) * step)
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
    by_metric: dict[str, list[tuple[dict[str, str], list[str]]]],
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
