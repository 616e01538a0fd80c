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


def _notebook_states(draws: np.ndarray, prof: dict) -> np.ndarray:
    # the notebook's on/off state machine over its first draw of each step (sequential)
    p_on, p_off, active = prof["p_on"], prof["p_off"], prof["active"]
    states = []
    for r in draws.tolist():
        if active:
            if r < p_off:
                active = False
        elif r < p_on:
            active = True
        states.append(active)
    prof["active"] = active
    return np.array(states, dtype=bool)


def _utils(pod: Pod | None, times: np.ndarray, draw: Draw, step: int, tz: int) -> np.ndarray:
    """telemetry._utils, as an int array."""
    n = len(times)
    if pod is None:
        r = draw(n)
        return np.where(r < 0.85, 0, np.where(r < 0.97, 1, 2)).astype(np.int64)
    prof = pod.prof
    if pod.kind == "notebook":
        both = draw(2 * n)  # per step: the state's draw, then the value's
        active = _notebook_states(both[0::2], prof)
        value = both[1::2]
        u = np.where(active, prof["burst"] + (value - 0.5) * 30, value * 3)
        return _clip(u, np.trunc(u))
    if pod.kind == "inference":
        lo, amp, noise = prof["lo"], prof["hi"] - prof["lo"], prof["noise"] * 2
        cyc = _cycle_table()[(times + tz) % SECONDS_PER_DAY]
        u = lo + amp * cyc + (draw(n) - 0.5) * noise
        return _clip(u, np.trunc(u + 0.5))
    r = draw(n)
    u = prof["base"] + (r - 0.5) * (prof["noise"] * 2)
    if prof["ckpt"]:  # checkpoint writes
        u = np.where((times // step + prof["phase"]) % prof["ckpt"] == 0, prof["dip"] + r * 10, u)
    u = np.where(times < pod.start + 600, r * 12, u)  # pulling data / building the model
    return _clip(u, np.trunc(u + 0.5))


def _segment_arrays(
    pod: Pod | None,
    gpu: Gpu,
    itype: InstanceType,
    ts: list[int],
    draw: Draw,
    step: int,
    tz: int,
) -> tuple:
    """telemetry._segment_values as (times, values) arrays; ``ts`` are consecutive step times."""
    n = len(ts)
    times = (ts[0] if n else 0) + step * np.arange(n, dtype=np.int64)
    utils = _utils(pod, times, draw, step, tz)
    u = utils.astype(np.float64)
    idle_w = gpu.idle_w
    if pod is None:
        fb = np.full(n, float(gpu.idle_fb))
        pw = fixed(idle_w + u * 0.9 + (draw(n) - 0.5) * 3, 3)
        gr = fixed(u * 0.004 * draw(n), 6)
        return (times, u), (times, fb), (times, pw), (times, gr)
    prof = pod.prof
    total = itype.fb_total_mib
    fb_base = prof["fb"] * total
    jitter = 0.01 * total
    fb_int = (fb_base + (draw(n) - 0.5) * jitter).astype(np.int64)  # int(): toward zero
    fb = np.minimum(total, fb_int).astype(np.float64)
    span = (itype.max_watts - idle_w) * prof["eff"] / 100.0
    cap = itype.max_watts * 1.02
    pw = fixed(np.minimum(cap, idle_w + span * u + (draw(n) - 0.5) * 12), 3)
    g = u * (prof["ratio"] / 100.0) + (draw(n) - 0.5) * 0.02
    gr = fixed(np.where(g < 0, 0.0, np.where(g > 1, 1.0, g)), 6)
    return (times, u), (times, fb), (times, pw), (times, gr)


@contextmanager
def array_segments(rng: random.Random, step: int, tz: int) -> Iterator[SegmentFn]:
    """The hourly path's segments (a ``telemetry.Segments``): arrays drawn from ``rng``'s numpy
    twin; ``rng`` continues after them when the block ends."""
    with twin(rng) as mirror:
        draw = mirror.random_sample

        def segment(pod: Pod | None, gpu: Gpu, itype: InstanceType, ts: list[int]) -> tuple:
            return _segment_arrays(pod, gpu, itype, ts, draw, step, tz)

        yield segment
