"""Serving counters: the token and request counters of the inference pods (vLLM, TGI, Triton).

As Prometheus query_range JSON, one file per metric and cluster-day, as ``gpucost collect
--serving`` lands them.

The engine follows the pod's image: ``vllm/vllm-openai`` exports vLLM's counters (``model_name``
and ``engine`` labels; ``vllm:request_success_total`` one series per ``finished_reason``), Triton's
image its per-model counters (``model`` and ``version`` labels; ``nv_inference_request_failure``
one series per ``reason``), the project's own server image (built on TGI) TGI's counters, which
carry no model label. Every series also has the labels a Prometheus scrape of the pod adds
(``namespace``, ``pod``, ``container``, ``instance``, ``job``). Counters are cumulative from the
container's start and fall back to zero when it restarts (same pod name and labels): about one pod
in five restarts once.

Nothing here draws from the generator's other random streams: each pod's counters come from a
``random.Random`` seeded with the month's seed and the pod's uid, so adding these files moves no
other byte of the landing zone.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gpucost.synth.reference import SECONDS_PER_DAY
from gpucost.synth.scheduling import Pod
from gpucost.synth.telemetry import daily_cycle

# The counters the collector lands with --serving (gpucost.commands.collect.SERVING_METRICS).
VLLM_METRICS = (
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
)
TGI_METRICS = (
    "tgi_request_count",
    "tgi_request_success",
    "tgi_request_input_length_sum",
    "tgi_request_generated_tokens_sum",
)
TRITON_METRICS = (
    "nv_inference_request_success",
    "nv_inference_request_failure",
    "nv_inference_count",
)
SERVING_METRICS = VLLM_METRICS + TGI_METRICS + TRITON_METRICS

# What each serving project's vLLM pods serve (--served-model-name).
VLLM_MODELS = {
    "rag-search": "meta-llama/Llama-3.1-8B-Instruct",
    "translate-v3": "facebook/nllb-moe-54b",
    "summarizer": "mistralai/Mistral-7B-Instruct-v0.3",
    "detector-v2": "Qwen/Qwen2-VL-7B-Instruct",
    "video-tagging": "llava-hf/llava-v1.6-mistral-7b-hf",
    "feed-ranker": "BAAI/bge-reranker-v2-m3",
    "ads-ctr": "Qwen/Qwen2.5-1.5B-Instruct",
    "model-gateway": "meta-llama/Llama-3.1-70B-Instruct",
}
VLLM_FINISHED_REASONS = (("stop", 0.86), ("length", 0.12), ("abort", 0.02))
TRITON_FAILURE_REASONS = ("BACKEND", "CANCELED", "OTHER", "REJECTED")
INFERENCES_PER_REQUEST = (1, 4, 8)  # Triton's inferences per successful request (batching)
SERVER_PORT = 8000
TRITON_METRICS_PORT = 8002


def engine_of(pod: Pod) -> str | None:
    """The serving engine of an inference pod, from its main container's image (None: no server)."""
    if pod.kind != "inference":
        return None
    image = pod.containers[0].image
    if image.startswith("vllm/"):
        return "vllm"
    if "tritonserver" in image:
        return "triton"
    return "tgi"


def triton_model(project: str) -> tuple[str, str]:
    """Triton's (model, version) for a project: the repository's directory name and its version."""
    return project.replace("-", "_"), str(1 + sum(map(ord, project)) % 4)


@dataclass(slots=True)
class _State:
    """One pod's counters so far (since its container last started) and its restart time."""

    rng: random.Random
    restart_at: int | None
    counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)


def _state(pod: Pod, seed: int, step: int) -> _State:
    rng = random.Random(f"{seed}/serving/{pod.uid}")
    restart_at = None
    life = pod.end - pod.start
    if rng.random() < 0.2 and life > 4 * step:
        restart_at = pod.start + (1 + rng.randrange(life // step - 2)) * step
    return _State(rng, restart_at)


def _scrape_labels(pod: Pod, engine: str) -> dict[str, str]:
    port = TRITON_METRICS_PORT if engine == "triton" else SERVER_PORT
    return {
        "container": pod.containers[0].name,
        "instance": f"{pod.pod_ip}:{port}",
        "job": pod.created_by_name.rsplit("-", 1)[0],
        "namespace": pod.namespace,
        "pod": pod.name,
    }


def requests_at(pod: Pod, t: int, step: int, tz: int, draw: float) -> int:
    """The requests a pod served over the step ending at ``t``, from its stream's next random()."""
    busy = 0.35 + 0.65 * daily_cycle(t, tz)
    return max(0, round(pod.gpus * step * 0.4 * busy * (0.6 + 0.8 * draw)))


def triton_rises(pod: Pod, requests: int, failed: int, reason: str, per_request: int) -> dict:
    """Triton's rises over a step: ``failed`` of ``requests`` failed for ``reason``, each success
    counting ``per_request`` inferences."""
    model, version = triton_model(pod.project)
    base = (("model", model), ("version", version))
    out = {
        ("nv_inference_request_success", base): requests - failed,
        ("nv_inference_count", base): (requests - failed) * per_request,
    }
    for name in TRITON_FAILURE_REASONS:
        key = ("nv_inference_request_failure", (*base[:1], ("reason", name), *base[1:]))
        out[key] = failed if name == reason else 0
    return out


def vllm_rises(pod: Pod, requests: int, prompt: int, generated: int) -> dict:
    """vLLM's rises over a step: tokens, and the requests by finished reason."""
    base = (("engine", "0"), ("model_name", VLLM_MODELS[pod.project]))
    out = {
        ("vllm:prompt_tokens_total", base): prompt,
        ("vllm:generation_tokens_total", base): generated,
    }
    left = requests
    for i, (reason, share) in enumerate(VLLM_FINISHED_REASONS):
        n = left if i == len(VLLM_FINISHED_REASONS) - 1 else min(left, round(requests * share))
        left -= n
        labels = (*base[:1], ("finished_reason", reason), *base[1:])
        out[("vllm:request_success_total", labels)] = n
    return out


def tgi_rises(requests: int, failed: int, prompt: int, generated: int) -> dict:
    """TGI's rises over a step (its counters carry no model label)."""
    return {
        ("tgi_request_count", ()): requests,
        ("tgi_request_success", ()): requests - failed,
        ("tgi_request_input_length_sum", ()): prompt,
        ("tgi_request_generated_tokens_sum", ()): generated,
    }


def _randint_sum(rng: random.Random, low: int, high: int, count: int) -> int:
    """``sum(rng.randint(low, high) for _ in range(count))``, drawing exactly as ``randint`` does
    (CPython's ``_randbelow_with_getrandbits``: the top ``n.bit_length()`` bits of a word, again
    while they are ``>= n``) without its per-call checks."""
    n = high - low + 1
    k, bits, total = n.bit_length(), rng.getrandbits, 0
    for _ in range(count):
        r = bits(k)
        while r >= n:
            r = bits(k)
        total += r
    return low * count + total


def _failures(rng: random.Random, count: int) -> int:
    """How many of ``count`` requests failed (one random() each, 1 %)."""
    draw = rng.random
    return sum([draw() < 0.01 for _ in range(count)])


def _increments(pod: Pod, engine: str, rng: random.Random, t: int, step: int, tz: int) -> dict:
    """The counters' rises over the step ending at ``t``: {(metric, extra labels): rise}. The
    draws, in order: the requests' random(); Triton: a random() per request (up to 20) for
    failures, the failure reason, the inferences per request; vLLM and TGI: a randint per request
    (up to 8) for prompt tokens, as many for generated tokens, TGI then a random() per request (up
    to 20) for failures."""
    requests = requests_at(pod, t, step, tz, rng.random())
    if engine == "triton":
        failed = _failures(rng, min(requests, 20))
        reason = TRITON_FAILURE_REASONS[rng.randrange(len(TRITON_FAILURE_REASONS))]
        return triton_rises(pod, requests, failed, reason, rng.choice(INFERENCES_PER_REQUEST))
    prompt = _randint_sum(rng, 200, 1800, min(requests, 8)) * requests // 8
    generated = _randint_sum(rng, 40, 600, min(requests, 8)) * requests // 8
    if engine == "vllm":
        return vllm_rises(pod, requests, prompt, generated)
    failed = _failures(rng, min(requests, 20))
    return tgi_rises(requests, failed, prompt, generated)


def text_totals(ts: list[int], totals: list[float]) -> str:
    """A counter's samples as the raw file's JSON fragment (a :data:`RenderFn`)."""
    return ",".join([f'[{t},"{total:.0f}"]' for t, total in zip(ts, totals, strict=True)])


def array_totals(ts: list[int], totals: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """A counter's samples as arrays, for the hourly path (a :data:`RenderFn`)."""
    return np.array(ts, dtype=np.int64), np.array(totals, dtype=np.float64)


# (a counter's step times, its totals) -> its chunk
RenderFn = Callable[[list[int], list[float]], object]


def _counted(
    pod: Pod, engine: str, state: _State, times: list[int], step: int, tz: int
) -> dict[tuple, list[float]]:
    """A pod's counters at each of ``times`` (the day's steps of its life), from ``state``'s.

    Each step's rises come from :func:`_increments` (the same keys, in the same order, every
    step); the first scrape after the server came up reads zero everywhere, and at the restart
    every counter falls back to zero before the step's rise. A counter is its running sum
    (``itertools.accumulate``: the float additions of a step-by-step count, in the same order)."""
    rows = []
    for t in times:
        rises = _increments(pod, engine, state.rng, t, step, tz)
        rows.append(dict.fromkeys(rises, 0) if t == pod.start else rises)
    restart = times.index(state.restart_at) if state.restart_at in times else len(times)
    out = {}
    for key, rises in zip(rows[0], zip(*[r.values() for r in rows], strict=True), strict=True):
        before = itertools.accumulate(rises[:restart], initial=state.counters.get(key, 0.0))
        after = itertools.accumulate(rises[restart:], initial=0.0)
        totals = [*itertools.islice(before, 1, None), *itertools.islice(after, 1, None)]
        state.counters[key] = totals[-1]
        out[key] = totals
    if restart < len(times):  # counters that did not rise today restart too
        state.counters = {k: v if k in out else 0.0 for k, v in state.counters.items()}
    return out


def serving_day(
    pods: list[Pod],
    day_start: int,
    step: int,
    window_end: int,
    seed: int,
    tz_hours: int,
    states: dict[str, _State],
    render: RenderFn = text_totals,
) -> dict[str, list[tuple[dict[str, str], list]]]:
    """The serving counters of one cluster-day, {metric: [(labels, chunks)]}: every metric of
    :data:`SERVING_METRICS` has its list, empty when no pod of the cluster runs that engine.

    A pod's series have a sample at each step time in ``[start, end)`` of the day; the value at
    ``t`` counts everything since the container started, through ``t``. ``states`` carries each
    pod's counters from one day to the next (keyed by the pod's uid). ``render`` makes a counter's
    chunk (JSON fragments by default, arrays for the hourly path)."""
    out: dict[str, list[tuple[dict[str, str], list]]] = {m: [] for m in SERVING_METRICS}
    tz = tz_hours * 3600
    day_end = min(day_start + SECONDS_PER_DAY, window_end)
    for pod in pods:
        engine = engine_of(pod)
        if engine is None or pod.node is None:
            continue
        lo, hi = max(pod.start, day_start), min(pod.end, day_end)
        if hi <= lo:
            continue
        state = states.get(pod.uid)
        if state is None:
            state = states[pod.uid] = _state(pod, seed, step)
        scrape = _scrape_labels(pod, engine)
        times = list(range(lo, hi, step))
        for (metric, extra), totals in _counted(pod, engine, state, times, step, tz).items():
            labels = dict(sorted({"__name__": metric, **scrape, **dict(extra)}.items()))
            out[metric].append((labels, [render(times, totals)]))
    if not any(out.values()):
        return {}
    return out
