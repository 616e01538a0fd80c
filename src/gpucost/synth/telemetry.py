"""Telemetry writers: DCGM and kube-state-metrics series of one cluster-day, as Prometheus
query_range JSON."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpucost.synth.common import sorted_labels
from gpucost.synth.fleet import Cluster, Gpu, Node
from gpucost.synth.reference import (
    DCGM_METRICS,
    GPUS_PER_NODE,
    KUBE_METRICS,
    PRIORITY_CLASS,
    SECONDS_PER_DAY,
    InstanceType,
)
from gpucost.synth.scheduling import Pod


@dataclass(slots=True)
class Gap:
    node: int
    start: int
    end: int


# One run of samples of one GPU (its tenant or None, the GPU, its instance type, the consecutive
# step times) -> its UTIL, FB_USED, POWER_USAGE and GR_ENGINE_ACTIVE chunks, drawing from the
# cluster-day's random stream: JSON fragments (_segment_values) or arrays (telemetry_arrays).
SegmentFn = Callable[[Pod | None, Gpu, InstanceType, list[int]], tuple]
# (the cluster-day's random stream, step, the cluster's UTC offset in seconds) -> a SegmentFn for
# the block; the stream goes on after it
Segments = Callable[[random.Random, int, int], AbstractContextManager[SegmentFn]]
# (first time, step, count, value) -> the chunks of a run of one constant value
RunFn = Callable[[int, int, int, str], list]


@contextmanager
def text_segments(rng: random.Random, step: int, tz: int) -> Iterator[SegmentFn]:
    """The raw files' segments: :func:`_segment_values`, JSON fragments."""

    def segment(pod: Pod | None, gpu: Gpu, itype: InstanceType, ts: list[int]) -> tuple:
        return _segment_values(pod, gpu, itype, ts, rng, step, tz)

    yield segment


def text_run(start: int, step: int, count: int, value: str) -> list[str]:
    """A run of one value as one JSON fragment (``[t,"v"],...``; empty when ``count`` <= 0)."""
    return [",".join([f'[{t},"{value}"]' for t in range(start, start + count * step, step)])]


def daily_cycle(t: int, tz: int) -> float:
    """The inference load's daily shape at ``t`` (``tz``: UTC offset, seconds): 0 at 03:00 local,
    1 at 15:00."""
    hour = ((t + tz) % SECONDS_PER_DAY) / 3600.0
    return 0.5 - 0.5 * math.cos((hour - 3.0) / 24.0 * 2 * math.pi)  # peak mid-afternoon


def _shared_node_series(
    node: Node, pods: list[Pod], ts: list[int], segment: SegmentFn
) -> tuple[dict[str, list], int]:
    """DCGM series of the shared node for the steps ``ts``: one per MIG instance (GPU_I_ID /
    GPU_I_PROFILE and its pod), one per time-sliced replica on the same UUID, one per idle GPU."""
    out: dict[str, list] = {m: [] for m in DCGM_METRICS}
    samples = 0
    by_gpu: dict[int, list[Pod]] = {}
    for p in pods:
        by_gpu.setdefault(p.gpu_idx[0], []).append(p)
    for gpu in node.gpus:
        tenants: list[Pod | None] = list(by_gpu.get(gpu.index, [])) or [None]
        for p in tenants:
            vals = segment(p, gpu, node.itype, ts)
            extra: dict[str, str] = {}
            if p is not None:
                extra = {"container": p.containers[0].name, "namespace": p.namespace, "pod": p.name}
                if "mig" in p.prof:
                    extra |= {"GPU_I_ID": p.prof["mig"][0], "GPU_I_PROFILE": p.prof["mig"][1]}
            for metric, values in zip(DCGM_METRICS, vals, strict=True):
                labels = sorted_labels({"__name__": metric, **gpu.labels, **extra})
                out[metric].append((labels, [values]))
            samples += len(DCGM_METRICS) * len(ts)
    return out, samples


def _utils(pod: Pod | None, ts: list[int], rnd: Callable[[], float], step: int, tz: int) -> list:
    if pod is None:
        return [0 if r < 0.85 else (1 if r < 0.97 else 2) for r in (rnd() for _ in ts)]
    prof = pod.prof
    kind = pod.kind
    out: list[int] = []
    append = out.append
    if kind == "notebook":
        p_on, p_off, burst, active = prof["p_on"], prof["p_off"], prof["burst"], prof["active"]
        for _ in ts:
            r = rnd()
            if active:
                if r < p_off:
                    active = False
            elif r < p_on:
                active = True
            u = burst + (rnd() - 0.5) * 30 if active else rnd() * 3
            append(0 if u < 0 else 100 if u > 100 else int(u))
        prof["active"] = active
        return out
    if kind == "inference":
        lo, amp, noise = prof["lo"], prof["hi"] - prof["lo"], prof["noise"] * 2
        for t in ts:
            cyc = daily_cycle(t, tz)
            u = lo + amp * cyc + (rnd() - 0.5) * noise
            append(0 if u < 0 else 100 if u > 100 else int(u + 0.5))
        return out
    base, noise, ckpt, phase, dip = (
        prof["base"],
        prof["noise"] * 2,
        prof["ckpt"],
        prof["phase"],
        prof["dip"],
    )
    warm = pod.start + 600
    for t in ts:
        if t < warm:
            u = rnd() * 12  # pulling data / building the model
        elif ckpt and (t // step + phase) % ckpt == 0:
            u = dip + rnd() * 10  # checkpoint write
        else:
            u = base + (rnd() - 0.5) * noise
        append(0 if u < 0 else 100 if u > 100 else int(u + 0.5))
    return out


def _segment_values(
    pod: Pod | None,
    gpu: Gpu,
    itype: InstanceType,
    ts: list[int],
    rng: random.Random,
    step: int,
    tz: int,
) -> tuple[str, str, str, str]:
    """Values of one run of samples on one GPU, as ready-made JSON ``values`` fragments
    (``[t,"v"],[t,"v"]``) for UTIL, FB_USED, POWER_USAGE and GR_ENGINE_ACTIVE."""
    rnd = rng.random
    utils = _utils(pod, ts, rnd, step, tz)
    tu = list(zip(ts, utils, strict=True))
    util_s = ",".join([f'[{t},"{u}"]' for t, u in tu])
    idle_w = gpu.idle_w
    if pod is None:
        fb = gpu.idle_fb
        fb_s = ",".join([f'[{t},"{fb}"]' for t in ts])
        pw_s = ",".join([f'[{t},"{idle_w + u * 0.9 + (rnd() - 0.5) * 3:.3f}"]' for t, u in tu])
        gr_s = ",".join([f'[{t},"{u * 0.004 * rnd():.6f}"]' for t, u in tu])
        return util_s, fb_s, pw_s, gr_s
    prof = pod.prof
    total = itype.fb_total_mib
    fb_base = prof["fb"] * total
    jitter = 0.01 * total
    fb_s = ",".join([f'[{t},"{min(total, int(fb_base + (rnd() - 0.5) * jitter))}"]' for t in ts])
    span = (itype.max_watts - idle_w) * prof["eff"] / 100.0
    cap = itype.max_watts * 1.02
    pw_s = ",".join(
        [f'[{t},"{min(cap, idle_w + span * u + (rnd() - 0.5) * 12):.3f}"]' for t, u in tu]
    )
    ratio = prof["ratio"] / 100.0
    gr = []
    for t, u in tu:
        g = u * ratio + (rnd() - 0.5) * 0.02
        gr.append(f'[{t},"{0.0 if g < 0 else 1.0 if g > 1 else g:.6f}"]')
    return util_s, fb_s, pw_s, ",".join(gr)


def write_matrix(path: Path, series: list[tuple[dict[str, str], list[str]]]) -> None:
    """Write a Prometheus ``/api/v1/query_range`` response.  ``series`` holds (labels, values
    fragments); fragments are pre-rendered ``[t,"v"]`` lists (values never need escaping),
    which keeps a day of a large cluster small in memory.  Series are sorted by label set,
    as Prometheus does."""
    series.sort(key=lambda s: tuple(s[0].items()))
    with path.open("w", encoding="utf-8") as f:
        f.write('{"status":"success","data":{"resultType":"matrix","result":[')
        for i, (labels, fragments) in enumerate(series):
            f.write("," if i else "")
            f.write('{"metric":')
            f.write(json.dumps(labels, separators=(",", ":")))
            f.write(',"values":[')
            f.write(",".join([frag for frag in fragments if frag]))
            f.write("]}")
        f.write("]}}")


def cluster_dcgm_day(
    cluster: Cluster,
    day_pods: list[Pod],
    day_start: int,
    step: int,
    window_end: int,
    gap: Gap | None,
    rng: random.Random,
    segments: Segments = text_segments,
) -> tuple[dict[str, list], int]:
    """The DCGM series of one cluster-day, {metric: [(labels, chunks)]}, and the samples they hold.
    ``segments`` renders the samples (JSON fragments by default), drawing from ``rng``."""
    with segments(rng, step, cluster.tz_hours * 3600) as segment:
        return _dcgm_day(cluster, day_pods, day_start, step, window_end, gap, segment)


def _dcgm_day(
    cluster: Cluster,
    day_pods: list[Pod],
    day_start: int,
    step: int,
    window_end: int,
    gap: Gap | None,
    segment: SegmentFn,
) -> tuple[dict[str, list], int]:
    n_steps = SECONDS_PER_DAY // step
    day_end = day_start + SECONDS_PER_DAY
    ts = list(range(day_start, day_end, step))
    out: dict[str, list] = {m: [] for m in DCGM_METRICS}
    samples = 0
    by_node: dict[int, list[Pod]] = {}
    for p in day_pods:
        assert p.node is not None
        by_node.setdefault(p.node.idx, []).append(p)
    for node in cluster.nodes:
        if node.join >= day_end:
            continue
        k0 = max(0, (node.join - day_start) // step)
        if node.reserved:
            window = ts[k0 : min(n_steps, (window_end - day_start) // step)]
            shared, n = _shared_node_series(node, by_node.get(node.idx, []), window, segment)
            for metric, series in shared.items():
                out[metric].extend(series)
            samples += n
            continue
        gk0 = gk1 = 0
        if gap is not None and gap.node == node.idx:
            gk0 = min(n_steps, max(0, (gap.start - day_start) // step))
            gk1 = min(n_steps, max(0, (gap.end - day_start) // step))
        per_gpu: list[list[tuple[int, int, Pod | None]]] = [[] for _ in range(GPUS_PER_NODE)]
        for p in by_node.get(node.idx, ()):
            ks = max(0, (p.start - day_start) // step)
            ke = min(n_steps, (min(p.end, window_end) - day_start) // step)
            if ke > ks:
                for g in p.gpu_idx:
                    per_gpu[g].append((ks, ke, p))
        for gpu in node.gpus:
            segs: list[tuple[int, int, Pod | None]] = []
            k = k0
            for ks, ke, p in sorted(per_gpu[gpu.index], key=lambda s: s[0]):
                if ks > k:
                    segs.append((k, ks, None))
                segs.append((ks, ke, p))
                k = ke
            if k < n_steps:
                segs.append((k, n_steps, None))
            if gk1 > gk0:  # exporter down: cut the hole out of every segment
                cut: list[tuple[int, int, Pod | None]] = []
                for ks, ke, p in segs:
                    if ks < gk0:
                        cut.append((ks, min(ke, gk0), p))
                    if ke > gk1:
                        cut.append((max(ks, gk1), ke, p))
                segs = cut
            series: dict[str, tuple[Pod | None, list, list, list, list]] = {}
            for ks, ke, p in segs:
                tslice = ts[ks:ke]
                vals = segment(p, gpu, node.itype, tslice)
                key = p.uid if p is not None else ""
                entry = series.get(key)
                if entry is None:
                    entry = series[key] = (p, [], [], [], [])
                for lst, frag in zip(entry[1:], vals, strict=True):
                    lst.append(frag)
                samples += 4 * len(tslice)
            for p, *metric_values in series.values():
                extra = {}
                if p is not None:
                    extra = {
                        "container": p.containers[0].name,
                        "namespace": p.namespace,
                        "pod": p.name,
                    }
                for metric, values in zip(DCGM_METRICS, metric_values, strict=True):
                    labels = sorted_labels({"__name__": metric, **gpu.labels, **extra})
                    out[metric].append((labels, values))
    return out, samples


def cluster_kube_day(
    cluster: Cluster,
    day_pods: list[Pod],
    day_start: int,
    step: int,
    window_end: int,
    run: RunFn = text_run,
) -> dict[str, list]:
    """The kube-state-metrics series of one cluster-day, {metric: [(labels, chunks)]}: each
    series a run of one value (``run`` renders it, JSON fragments by default)."""
    n_steps = SECONDS_PER_DAY // step
    day_end = day_start + SECONDS_PER_DAY
    out: dict[str, list] = {m: [] for m in KUBE_METRICS}
    cname = cluster.name

    def pairs(ks: int, ke: int, value: str) -> list:
        return run(day_start + ks * step, step, ke - ks, value)

    for node in cluster.nodes:
        if node.join >= day_end:
            continue
        k0 = max(0, (node.join - day_start) // step)
        ones = pairs(k0, n_steps, "1")
        out["kube_node_info"].append(
            (sorted_labels({"__name__": "kube_node_info", **node.info_labels}), ones)
        )
        for resource, unit, value in (
            ("nvidia_com_gpu", "integer", str(GPUS_PER_NODE)),
            ("cpu", "core", str(node.itype.vcpus)),
            ("memory", "byte", str(node.itype.memory_bytes)),
        ):
            labels = {
                "__name__": "kube_node_status_capacity",
                "cluster": cname,
                "node": node.name,
                "resource": resource,
                "unit": unit,
            }
            out["kube_node_status_capacity"].append((labels, pairs(k0, n_steps, value)))
    for p in day_pods:
        assert p.node is not None
        base = {"cluster": cname, "namespace": p.namespace, "pod": p.name, "uid": p.uid}
        ks = max(0, (p.start - day_start) // step)
        ke = min(n_steps, (min(p.end, window_end) - day_start) // step)
        if ke > ks:
            ones = pairs(ks, ke, "1")
            info = {
                **base,
                "__name__": "kube_pod_info",
                "created_by_kind": p.created_by_kind,
                "created_by_name": p.created_by_name,
                "host_ip": p.node.ip,
                "node": p.node.name,
                "pod_ip": p.pod_ip,
                "priority_class": PRIORITY_CLASS[p.kind],
            }
            out["kube_pod_info"].append((sorted_labels(info), ones))
            labels = {**base, "__name__": "kube_pod_labels", "label_app": p.app, **p.labels}
            out["kube_pod_labels"].append((sorted_labels(labels), ones))
            start = {**base, "__name__": "kube_pod_start_time"}
            out["kube_pod_start_time"].append((sorted_labels(start), pairs(ks, ke, str(p.start))))
            for c in p.containers:
                cinfo = {
                    **base,
                    "__name__": "kube_pod_container_info",
                    "container": c.name,
                    "container_id": c.container_id,
                    "image": c.image,
                    "image_id": c.image_id,
                    "image_spec": c.image,
                }
                out["kube_pod_container_info"].append((sorted_labels(cinfo), ones))
                requests = [("cpu", "core", c.cpu), ("memory", "byte", c.memory)]
                if c.gpus:
                    requests.insert(0, (c.gpu_resource, "integer", str(c.gpus)))
                for resource, unit, value in requests:
                    req = {
                        **base,
                        "__name__": "kube_pod_container_resource_requests",
                        "container": c.name,
                        "node": p.node.name,
                        "resource": resource,
                        "unit": unit,
                    }
                    out["kube_pod_container_resource_requests"].append(
                        (sorted_labels(req), pairs(ks, ke, value))
                    )
        if p.end < window_end and day_start <= p.end < day_end:
            for c in p.containers:
                done = {**base, "__name__": "kube_pod_completion_time", "container": c.name}
                out["kube_pod_completion_time"].append(
                    (sorted_labels(done), run(p.end, step, 1, str(p.end)))
                )
    return out
