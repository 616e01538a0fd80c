"""A landing zone's Prometheus series as OpenMetrics text, with timestamps, ending in ``# EOF``.

This is the input of ``promtool tsdb create-blocks-from openmetrics``: it turns the generator's
month into a real Prometheus TSDB for ``gpucost collect`` to query (tests/python/test_collect.py).

    gpucost openmetrics --landing landing --out month.om

Every ``metrics/<source>/<cluster>/<YYYY-MM-DD>/<metric>.json`` (Prometheus ``query_range`` JSON) is
read; each metric family is written once, contiguous, as OpenMetrics requires, with its series'
samples in time order (``name{labels} value timestamp``, timestamps in seconds). A series without a
``cluster`` label gets its folder's cluster, as a multi-cluster Prometheus's external label would.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def escape_label_value(value: str) -> str:
    """A label value as OpenMetrics quotes it: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _series_line_prefix(name: str, labels: dict[str, str]) -> str:
    parts = []
    for key in sorted(labels):
        if key == "__name__":
            continue
        if not _LABEL_NAME.match(key):
            raise ValueError(f"label name {key!r} of {name} is not a valid Prometheus label name")
        parts.append(f'{key}="{escape_label_value(labels[key])}"')
    return f"{name}{{{','.join(parts)}}}" if parts else name


def _metric_files(landing: Path) -> dict[str, list[tuple[str, Path]]]:
    """metric name -> [(cluster, file)] by date, then cluster (each series in time order)."""
    out: dict[str, list[tuple[str, str, Path]]] = {}
    for path in (landing / "metrics").glob("*/*/*/*.json"):
        source_cluster_date = path.relative_to(landing / "metrics").parts
        _, cluster, date, _ = source_cluster_date
        out.setdefault(path.stem, []).append((date, cluster, path))
    return {
        metric: [(cluster, path) for _, cluster, path in sorted(files)]
        for metric, files in sorted(out.items())
    }


def _series_of(path: Path) -> Iterator[tuple[dict[str, str], list[list]]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    data = doc.get("data") or {}
    if doc.get("status") != "success" or data.get("resultType") != "matrix":
        return
    for series in data.get("result") or []:
        yield series.get("metric") or {}, series.get("values") or []


def write_openmetrics(landing: Path, out: TextIO) -> dict[str, int]:
    """Write every landed query_range series of ``landing`` to ``out`` as OpenMetrics text.

    Returns counts: metric families, series (per file) and samples written."""
    families = series_count = samples = 0
    for metric, files in _metric_files(Path(landing)).items():
        if not _METRIC_NAME.match(metric):
            raise ValueError(f"file name {metric!r} is not a valid Prometheus metric name")
        out.write(f"# TYPE {metric} gauge\n")
        families += 1
        for cluster, path in files:
            for labels, values in _series_of(path):
                name = labels.get("__name__", metric)
                prefix = _series_line_prefix(name, {"cluster": cluster, **labels})
                out.writelines(f"{prefix} {value} {timestamp}\n" for timestamp, value in values)
                series_count += 1
                samples += len(values)
    out.write("# EOF\n")
    return {"families": families, "series": series_count, "samples": samples}


def write_openmetrics_file(landing: Path, path: Path) -> dict[str, int]:
    """``write_openmetrics`` into ``path`` (its folder is created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        return write_openmetrics(landing, out)


def cmd_openmetrics(args: argparse.Namespace) -> int:
    landing = Path(args.landing)
    if not (landing / "metrics").is_dir():
        print(f"gpucost openmetrics: {landing}/metrics does not exist", file=sys.stderr)
        return 2
    try:
        counts = write_openmetrics_file(landing, Path(args.out))
    except (OSError, ValueError) as error:
        print(f"gpucost openmetrics: {error}", file=sys.stderr)
        return 2
    print(
        f"Wrote {counts['families']} metric families, {counts['series']} series, "
        f"{counts['samples']} samples to {args.out}"
    )
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "openmetrics",
        help="write a landing zone's Prometheus series as OpenMetrics text (promtool backfill)",
    )
    parser.add_argument("--landing", required=True, help="landing zone holding metrics/")
    parser.add_argument("--out", required=True, help="OpenMetrics file to write")
    parser.set_defaults(func=cmd_openmetrics)
