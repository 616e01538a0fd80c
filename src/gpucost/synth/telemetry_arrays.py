"""The DCGM samples of the hourly path as arrays: the values the raw files hold, without the files.

:func:`array_segments` is the hourly twin of ``telemetry.text_segments``: per run of samples of
one GPU it makes what ``telemetry._segment_values`` renders (UTIL, FB_USED, POWER_USAGE,
GR_ENGINE_ACTIVE), as times and values arrays instead of JSON fragments, and as the raw file would
read back (ints for UTIL and FB_USED, power as ``"%.3f"``, GR_ENGINE_ACTIVE as ``"%.6f"``: see
:func:`fixed`). It draws from the cluster-day's stream through its numpy twin
(gpucost.synth.mt_twin), in the scalar code's order: per run, the utilisations (two draws per step
for a notebook), then FB_USED (tenants only), POWER_USAGE and GR_ENGINE_ACTIVE, so the hourly
month aggregates exactly the raw month's samples (tests/python/test_hourly_fast.py).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from gpucost.synth.fleet import Gpu
from gpucost.synth.mt_twin import twin
from gpucost.synth.reference import SECONDS_PER_DAY, InstanceType
from gpucost.synth.scheduling import Pod
from gpucost.synth.telemetry import SegmentFn, daily_cycle

Draw = Callable[[int], np.ndarray]
# a decimal's round trip is exact when the scaled value is this far from a tie (its own error is
# below 1e-9 for values under 10**6); nearer ones are formatted as the scalar code formats them
_TIE_BAND = 1e-6


def fixed(values: np.ndarray, digits: int) -> np.ndarray:
    """``float(f"{v:.{digits}f}")`` of every value, exactly.

    ``rint(v * 10**digits) / 10**digits``: the division of an integer by an exact power of ten is
    correctly rounded, i.e. the double nearest to the decimal, which is what parsing the decimal
    gives; ``rint`` picks the decimal's last digit as formatting does (the exact value rounded,
    half to even) unless ``v * 10**digits`` is within rounding error of a tie, and those few
    values (``_TIE_BAND``) are formatted and parsed one by one."""
    scale = 10.0**digits
    scaled = values * scale
    out = np.rint(scaled) / scale
    near = np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < _TIE_BAND)
    for i in near.tolist():
        out[i] = float(f"{float(values[i]):.{digits}f}")
    return out


@functools.cache
def _cycle_table() -> np.ndarray:
    # telemetry.daily_cycle for every second of a day (UTC offset folded into the second)
    return np.array([daily_cycle(s, 0) for s in range(SECONDS_PER_DAY)])


def _clip(u: np.ndarray, rounded: np.ndarray) -> np.ndarray:
    # 0 if u < 0 else 100 if u > 100 else rounded, as ints
    return np.where(u < 0, 0, np.where(u > 100, 100, rounded)).astype(np.int64)


def _notebook_states(draws: list[float], prof: dict) -> list[bool]:
    # the notebook's on/off state machine over its first draw of each step (sequential)
    p_on, p_off, active = prof["p_on"], prof["p_off"], prof["active"]
    states = []
    for r in draws:
        if active:
            if r < p_off:
                active = False
        elif r < p_on:
            active = True
        states.append(active)
    prof["active"] = active
    return states


IDLE, TRAINING, INFERENCE, NOTEBOOK = range(4)
_DRAWS_PER_STEP = (3, 4, 4, 5)  # utils (a notebook's two), FB_USED (tenants), POWER, GR_ENGINE


@dataclass(slots=True)
class _Segment:
    pod: Pod | None
    gpu: Gpu
    itype: InstanceType
    start: int  # first step time
    n: int  # steps

    @property
    def kind(self) -> int:
        if self.pod is None:
            return IDLE
        return {"notebook": NOTEBOOK, "inference": INFERENCE}.get(self.pod.kind, TRAINING)


class _Part:
    """One metric's samples of one segment: a view into its batch (a ``hourly.SampleSource``)."""

    __slots__ = ("batch", "hi", "lo", "metric")

    def __init__(self, batch: _Batch, metric: int, lo: int, hi: int) -> None:
        self.batch, self.metric, self.lo, self.hi = batch, metric, lo, hi

    def samples(self) -> tuple[np.ndarray, np.ndarray]:
        times, values = self.batch.result()
        return times[self.lo : self.hi], values[self.metric][self.lo : self.hi]


class _Batch:
    """Segments of a cluster-day in draw order, made at once: their draws are one run of the
    stream (per segment, as telemetry._segment_values draws them)."""

    def __init__(self) -> None:
        self.segments: list[_Segment] = []
        self.samples = 0
        self.made: tuple[np.ndarray, list[np.ndarray]] | None = None

    def add(self, segment: _Segment) -> tuple:
        lo, self.samples = self.samples, self.samples + segment.n
        self.segments.append(segment)
        return tuple(_Part(self, m, lo, self.samples) for m in range(4))

    def result(self) -> tuple[np.ndarray, list[np.ndarray]]:
        if self.made is None:
            raise RuntimeError("a batch's samples are read after it is made")
        return self.made

    def make(self, draw: Draw, step: int, tz: int) -> None:
        """Draw the batch's random numbers and make its samples."""
        self.made = _make(self.segments, draw, step, tz)


def _per_sample(values: list, counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.asarray(values), counts)


def _make(
    segments: list[_Segment], draw: Draw, step: int, tz: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The samples of the segments (time, UTIL, FB_USED, POWER_USAGE, GR_ENGINE_ACTIVE, each one
    array over the segments in order), as telemetry._segment_values makes them one by one."""
    n = np.array([s.n for s in segments], dtype=np.int64)
    kind = np.array([s.kind for s in segments], dtype=np.int64)
    total = int(n.sum())
    first = np.cumsum(n) - n  # each segment's first sample
    seg = np.repeat(np.arange(len(segments)), n)
    i = np.arange(total) - first[seg]  # the step within the segment
    times = _per_sample([s.start for s in segments], n) + step * i
    # where each segment's draws start, and each kind of draw within them
    drawn = n * np.array(_DRAWS_PER_STEP)[kind]
    at = np.cumsum(drawn) - drawn
    util_draws = np.where(kind == NOTEBOOK, 2 * n, n)
    fb_at = at + util_draws
    power_at = fb_at + np.where(kind == IDLE, 0, n)
    gr_at = power_at + n
    d = draw(int(drawn.sum()))
    utils = _utils_of(_Draws(segments, d, at, step, tz), kind[seg], seg, i, times)
    u = utils.astype(np.float64)
    pod = kind[seg] != IDLE
    idle_w = _per_sample([s.gpu.idle_w for s in segments], n)
    fb = _fb(segments, n, pod, d[fb_at[seg] + i])
    power_draw, gr_draw = d[power_at[seg] + i], d[gr_at[seg] + i]
    # idle GPUs
    power = idle_w + u * 0.9 + (power_draw - 0.5) * 3
    gr = u * 0.004 * gr_draw
    # tenants
    span = _param(
        segments, n, lambda s: (s.itype.max_watts - s.gpu.idle_w) * s.pod.prof["eff"] / 100.0
    )
    cap = _param(segments, n, lambda s: s.itype.max_watts * 1.02)
    ratio = _param(segments, n, lambda s: s.pod.prof["ratio"] / 100.0)
    power[pod] = np.minimum(cap, idle_w[pod] + span * u[pod] + (power_draw[pod] - 0.5) * 12)
    g = u[pod] * ratio + (gr_draw[pod] - 0.5) * 0.02
    gr[pod] = np.where(g < 0, 0.0, np.where(g > 1, 1.0, g))
    return times, [u, fb, fixed(power, 3), fixed(gr, 6)]


def _param(segments: list[_Segment], n: np.ndarray, of: Callable[[_Segment], float]) -> np.ndarray:
    # a tenant parameter per sample of the tenants' segments
    pods = [k for k, s in enumerate(segments) if s.pod is not None]
    return np.repeat(np.array([of(segments[k]) for k in pods], dtype=np.float64), n[pods])


def _fb(
    segments: list[_Segment], n: np.ndarray, pod: np.ndarray, fb_draw: np.ndarray
) -> np.ndarray:
    # FB_USED: the idle GPU's constant, a tenant's share of the memory with jitter (int())
    fb = _per_sample([float(s.gpu.idle_fb) for s in segments], n)
    total = _param(segments, n, lambda s: s.itype.fb_total_mib)
    fb_base = _param(segments, n, lambda s: s.pod.prof["fb"] * s.itype.fb_total_mib)
    jitter = _param(segments, n, lambda s: 0.01 * s.itype.fb_total_mib)
    used = (fb_base + (fb_draw[pod] - 0.5) * jitter).astype(np.int64)  # int(): toward zero
    fb[pod] = np.minimum(total.astype(np.int64), used)
    return fb


@dataclass(slots=True)
class _Draws:
    """A batch's segments, their draws and where each segment's start (``at``), with the step
    and the cluster's UTC offset: what the utilisation of each kind of sample is made from."""

    segments: list[_Segment]
    d: np.ndarray
    at: np.ndarray
    step: int
    tz: int

    def prof(self, seg: np.ndarray, kind: int, of: Callable[[dict], float]) -> np.ndarray:
        """A profile value for each sample of tenants of a ``kind`` (``seg``: their segments)."""
        table = [
            of(s.pod.prof) if s.pod is not None and s.kind == kind else 0.0 for s in self.segments
        ]
        return np.array(table, dtype=np.float64)[seg]


def _utils_of(
    draws: _Draws, kind: np.ndarray, seg: np.ndarray, i: np.ndarray, times: np.ndarray
) -> np.ndarray:
    """telemetry._utils for every sample (``kind``, ``seg``, ``i``, ``times``: per sample)."""
    utils = np.zeros(len(kind), dtype=np.int64)
    idle = kind == IDLE
    r = draws.d[draws.at[seg[idle]] + i[idle]]
    utils[idle] = np.where(r < 0.85, 0, np.where(r < 0.97, 1, 2))
    for code, make in ((TRAINING, _training), (INFERENCE, _inference), (NOTEBOOK, _notebook)):
        mine = np.flatnonzero(kind == code)
        if len(mine):
            utils[mine] = make(draws, seg[mine], i[mine], times[mine])
    return utils


def _training(draws: _Draws, seg: np.ndarray, i: np.ndarray, times: np.ndarray) -> np.ndarray:
    r = draws.d[draws.at[seg] + i]
    noise = draws.prof(seg, TRAINING, lambda p: p["noise"] * 2)
    u = draws.prof(seg, TRAINING, lambda p: p["base"]) + (r - 0.5) * noise
    ckpt = draws.prof(seg, TRAINING, lambda p: p["ckpt"]).astype(np.int64)
    phase = draws.prof(seg, TRAINING, lambda p: p["phase"]).astype(np.int64)
    dipped = (ckpt != 0) & ((times // draws.step + phase) % np.maximum(ckpt, 1) == 0)
    u = np.where(
        dipped, draws.prof(seg, TRAINING, lambda p: p["dip"]) + r * 10, u
    )  # checkpoint write
    warm = np.array([s.pod.start + 600 if s.pod is not None else 0 for s in draws.segments])
    u = np.where(times < warm[seg], r * 12, u)  # pulling data / building the model
    return _clip(u, np.trunc(u + 0.5))


def _inference(draws: _Draws, seg: np.ndarray, i: np.ndarray, times: np.ndarray) -> np.ndarray:
    lo = draws.prof(seg, INFERENCE, lambda p: p["lo"])
    amp = draws.prof(seg, INFERENCE, lambda p: p["hi"] - p["lo"])
    noise = draws.prof(seg, INFERENCE, lambda p: p["noise"] * 2)
    cyc = _cycle_table()[(times + draws.tz) % SECONDS_PER_DAY]
    u = lo + amp * cyc + (draws.d[draws.at[seg] + i] - 0.5) * noise
    return _clip(u, np.trunc(u + 0.5))


def _notebook(draws: _Draws, seg: np.ndarray, i: np.ndarray, times: np.ndarray) -> np.ndarray:
    del times  # a notebook's use does not follow the clock
    first = draws.at[seg] + 2 * i  # per step: the state's draw, then the value's
    state_draw, value = draws.d[first], draws.d[first + 1]
    active = np.empty(len(seg), dtype=bool)
    cuts = (np.flatnonzero(np.diff(seg)) + 1).tolist()
    for lo, hi in zip([0, *cuts], [*cuts, len(seg)], strict=True):
        prof = draws.segments[int(seg[lo])].pod.prof  # segments in draw order: the state goes on
        active[lo:hi] = _notebook_states(state_draw[lo:hi].tolist(), prof)
    burst = draws.prof(seg, NOTEBOOK, lambda p: p["burst"])
    u = np.where(active, burst + (value - 0.5) * 30, value * 3)
    return _clip(u, np.trunc(u))


@contextmanager
def array_segments(rng: random.Random, step: int, tz: int) -> Iterator[SegmentFn]:
    """The hourly path's segments (a ``telemetry.Segments``): each run's samples as sources the
    hourly aggregation reads, all made when the block ends from ``rng``'s numpy twin, in the
    scalar code's draw order; ``rng`` continues after them."""
    batch = _Batch()

    def segment(pod: Pod | None, gpu: Gpu, itype: InstanceType, ts: list[int]) -> tuple:
        return batch.add(_Segment(pod, gpu, itype, ts[0] if ts else 0, len(ts)))

    yield segment
    if batch.segments:
        with twin(rng) as mirror:
            batch.make(mirror.random_sample, step, tz)
