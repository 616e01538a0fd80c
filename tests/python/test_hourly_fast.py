"""The hourly path without per-sample strings (issue 20): the same random streams as the raw month,
the same values as the raw files read back, the same hourly files as the string path.

`gpucost generate --resolution hourly` draws the DCGM samples in bulk from a numpy twin of each
cluster-day's ``random.Random`` (gpucost.synth.mt_twin, gpucost.synth.telemetry_arrays), keeps
kube-state-metrics series as runs of one value (gpucost.synth.hourly.Run) and serving counters as
arrays. Here the raw month of the same config is aggregated by the string path (its files' JSON
fragments, read back by ``hourly_group_day``) and compared with the fast path's files.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from gpucost.synth import MonthConfig, generate_month
from gpucost.synth.hourly import (
    DCGM_SECONDS_METRIC,
    hourly_group_day,
    matrix_document,
    matrix_text,
)
from gpucost.synth.mt_twin import twin, words
from gpucost.synth.reference import DCGM_METRICS
from gpucost.synth.serving import _randint_sum
from gpucost.synth.telemetry_arrays import fixed


def test_numpy_twin_draws_the_python_stream():
    rng, reference = random.Random("42/dcgm/gpu-east/2026-10-01"), random.Random()
    rng.random()
    rng.getrandbits(11)
    reference.setstate(rng.getstate())
    with twin(rng) as mirror:
        doubles = mirror.random_sample(1_001)
        raw = words(mirror, 257)
        more = mirror.random_sample(3)
    assert doubles.tolist() == [reference.random() for _ in range(1_001)]  # bit for bit
    assert raw.tolist() == [reference.getrandbits(32) for _ in range(257)]
    assert more.tolist() == [reference.random() for _ in range(3)]
    # the Random goes on after the twin's draws
    assert rng.getstate() == reference.getstate()
    assert [rng.random() for _ in range(5)] == [reference.random() for _ in range(5)]


def test_randint_sum_draws_as_randint():
    for seed in range(20):
        a, b = random.Random(seed), random.Random(seed)
        for low, high, count in ((200, 1800, 8), (40, 600, 8), (0, 3, 5), (5, 5, 2), (1, 9, 0)):
            assert _randint_sum(a, low, high, count) == sum(
                b.randint(low, high) for _ in range(count)
            )
        assert a.getstate() == b.getstate()


def test_fixed_is_format_then_parse():
    rng = np.random.default_rng(5)
    values = np.concatenate(
        [
            rng.uniform(0, 800, 200_000),
            rng.uniform(0, 1, 200_000),
            # exact ties and their neighbours: x.xxx5 is exact for multiples of 1/16 and 1/64
            np.arange(0, 800, 1 / 16),
            np.nextafter(np.arange(0, 800, 1 / 16), 0),
            np.nextafter(np.arange(0, 800, 1 / 16), 1e9),
            np.arange(0, 1, 1 / 64),
            np.array([0.0, 0.0005, 0.0015, 2.5e-7, 1e-7, 0.9999995, 1.0]),
        ]
    )
    for digits in (3, 6):
        expected = [float(f"{v:.{digits}f}") for v in values.tolist()]
        assert fixed(values, digits).tolist() == expected


def _raw_by_metric(folder: Path) -> dict[str, list]:
    """A raw group-day folder as the generator hands it to the hourly path: {metric: [(labels,
    [the values' JSON fragment])]} (every metric's file, empty ones too)."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        series = json.loads(path.read_text())["data"]["result"]
        metric = series[0]["metric"]["__name__"] if series else path.stem
        out[metric] = [
            (s["metric"], [json.dumps(s["values"], separators=(",", ":"))[1:-1]]) for s in series
        ]
    return out


def _assert_same_document(fast: dict, slow: dict, dcgm_mean: bool, where: str) -> None:
    """Identical but for the last bits of the DCGM fields' hourly means (relative 1e-12)."""
    assert fast.keys() == slow.keys() and fast["status"] == slow["status"], where
    ours, theirs = fast["data"]["result"], slow["data"]["result"]
    assert [s["metric"] for s in ours] == [s["metric"] for s in theirs], where  # labels and order
    for a, b in zip(ours, theirs, strict=True):
        assert [h for h, _ in a["values"]] == [h for h, _ in b["values"]], (where, a["metric"])
        if not dcgm_mean:
            assert a["values"] == b["values"], (where, a["metric"])
            continue
        for (_, x), (_, y) in zip(a["values"], b["values"], strict=True):
            assert float(x) == pytest.approx(float(y), rel=1e-12, abs=1e-12), (where, a["metric"])


@pytest.mark.parametrize(
    "config",
    [
        # the session's generated month (its gap, two clusters, 10-minute samples)
        MonthConfig(seed=7, nodes=4, days=3, step_seconds=600, clusters=2),
        # one-minute samples: 60 a series and hour (no Slurm queue: its series are fragments)
        MonthConfig(seed=11, nodes=2, days=1, step_seconds=60, clusters=1, slurm_nodes=0),
        # hard mode
        MonthConfig(seed=3, nodes=4, days=2, step_seconds=600, hard=True),
    ],
    ids=["generated-month", "one-minute", "hard"],
)
def test_fast_hourly_is_the_string_paths(config: MonthConfig, tmp_path: Path):
    raw, fast = tmp_path / "raw", tmp_path / "hourly"
    generate_month(raw, config)
    generate_month(fast, replace(config, resolution="hourly"))
    # the rest of the landing zone is the raw month's, byte for byte
    rest = sorted(p.relative_to(raw) for p in raw.rglob("*") if p.is_file())
    rest = [p for p in rest if p.parts[0] != "metrics"]
    assert rest
    for relative in rest:
        assert (fast / relative).read_bytes() == (raw / relative).read_bytes(), relative
    landed = {p.relative_to(fast) for p in fast.glob("metrics/*/*/*/*.json")}
    expected: set[Path] = set()
    compared = 0
    for folder in sorted(raw.glob("metrics/*/*/*")):
        group, cluster = folder.parts[-3], folder.parts[-2]
        slow = hourly_group_day(group, cluster, _raw_by_metric(folder), config.step_seconds)
        for metric, series in slow.items():
            relative = folder.relative_to(raw) / f"{metric.replace(':', '_')}.json"
            expected.add(relative)
            mine = (fast / relative).read_text()
            # the writer's text is json.dumps of the collector's document
            assert matrix_text(series) == json.dumps(matrix_document(series), separators=(",", ":"))
            if group != "dcgm" or metric == DCGM_SECONDS_METRIC:
                assert mine == matrix_text(series), relative  # byte for byte
            else:
                document = json.loads(matrix_text(series))
                _assert_same_document(
                    json.loads(mine), document, metric in DCGM_METRICS, str(relative)
                )
            compared += sum(len(s["values"]) for s in series)
    assert landed == expected
    assert {p.parts[1] for p in landed} == {"dcgm", "kube", "serving"}
    assert compared > 5_000
