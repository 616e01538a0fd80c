"""Prometheus exposition text and OpenMetrics files as Prometheus API responses.

The warehouse reads telemetry as Prometheus ``/api/v1/query_range`` responses
(``macros/landing.sql``).
A file in exposition text (what ``curl :9400/metrics`` prints from dcgm-exporter or
kube-state-metrics)
or in OpenMetrics (what ``promtool tsdb dump-openmetrics`` prints) is turned here into the same
response
shape, ``{"status": "success", "data": {"resultType": "matrix", "result": [...]}}``, so the SQL
that
reads the one reads the other. Parsing is prometheus-client's, never a copy of it.

A sample without a timestamp (exposition text as an exporter serves it) takes the file's time: a
UTC
time in the file's name when it has one (``...2026-10-01T12:00:00Z...``,
``...20261001T120000Z...``),
else the file's modification time. A file that cannot be parsed, or that holds no sample, comes
back as
``{"status": "error", "gpucost_reason": ...}`` and the warehouse quarantines it with that reason.

The functions are registered in DuckDB by ``gpucost.engines.duckdb_plugin`` (profiles.yml) as
``gpucost_prometheus_text(content, filename, modified_epoch)`` and ``gpucost_gunzip(content)``.
"""

from __future__ import annotations

import calendar
import gzip
import json
import re
import zlib
from pathlib import PurePosixPath

# A UTC time in a file name: 2026-10-01T12:00:00Z, 2026-10-01T12-00-00Z or 20261001T120000Z.
_NAME_TIME = re.compile(
    r"(?<![0-9])(\d{4})-?(\d{2})-?(\d{2})T(\d{2})[:-]?(\d{2})[:-]?(\d{2})(?:\.\d+)?Z(?![0-9])"
)


def file_time(filename: str, modified_epoch: float | None) -> float | None:
    """The time a sample without a timestamp is taken at: the UTC time in the file's name, else
    the file's modification time (epoch seconds)."""
    match = _NAME_TIME.search(PurePosixPath(filename).name)
    if match:
        year, month, day, hour, minute, second = (int(part) for part in match.groups())
        try:
            return float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))
        except (ValueError, OverflowError):
            pass
    return modified_epoch


def _is_openmetrics(text: str) -> bool:
    """OpenMetrics text ends with the ``# EOF`` line (the format requires it); exposition text
    has none."""
    return text.rstrip().endswith("# EOF")


def _value_text(value: float) -> str:
    return repr(float(value))


def parse_metrics_text(text: str, filename: str, modified_epoch: float | None) -> dict:
    """The samples of an exposition-text or OpenMetrics file as a query_range response (a dict).

    Every sample is kept, grouped into one series per metric name and label set with its samples in
    file order; counters keep their ``_total`` name, histograms their ``_bucket`` / ``_sum`` /
    ``_count``
    series. The response's ``gpucost_reason`` names why a file yields nothing (parse error, no
    sample,
    no time for samples without a timestamp)."""
    if _is_openmetrics(text):
        from prometheus_client.openmetrics.parser import text_string_to_metric_families

        kind = "OpenMetrics"
    else:
        from prometheus_client.parser import text_string_to_metric_families

        kind = "exposition text"
    default_time = file_time(filename, modified_epoch)
    series: dict[tuple, dict] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.timestamp is not None:
                    epoch = float(sample.timestamp)
                elif default_time is not None:
                    epoch = default_time
                else:
                    return _error("sample without a timestamp and no file time")
                labels = {"__name__": sample.name, **sample.labels}
                key = tuple(sorted(labels.items()))
                entry = series.setdefault(key, {"metric": labels, "values": []})
                entry["values"].append([epoch, _value_text(sample.value)])
    except Exception as error:  # the parsers raise ValueError, IndexError, KeyError on bad input
        message = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        return _error(f"unparseable {kind}: {message}")
    if not series:
        return _error(f"no samples in the {kind} file")
    return {"status": "success", "data": {"resultType": "matrix", "result": list(series.values())}}


def _error(reason: str) -> dict:
    return {"status": "error", "gpucost_reason": reason}


def prometheus_text_response(
    content: str | None, filename: str | None, modified_epoch: float | None
) -> str | None:
    """DuckDB scalar function: a text file's content as a query_range response, JSON text."""
    if content is None:
        return None
    return json.dumps(parse_metrics_text(content, filename or "", modified_epoch))


def gunzip_text(content: bytes | None) -> str | None:
    """DuckDB scalar function: a gzip file's content as UTF-8 text; null when it is not a complete
    gzip stream (truncated, not gzip) or not UTF-8 (the caller quarantines the file)."""
    if content is None:
        return None
    try:
        return gzip.decompress(content).decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None
