"""Deterministic generator of a month of raw landing-zone files for a GPU fleet.

Everything is derived from ``random.Random`` instances seeded from ``seed`` (string seeds are
hashed with SHA-512 by the stdlib, so they do not depend on ``PYTHONHASHSEED``); no wall-clock
time, no set iteration order.  Same arguments -> byte-identical files.

Layout written below ``out_dir``::

    billing/focus/<YYYY-MM>/focus_export_<billing account id>.csv   FOCUS 1.2 CSV export
    metrics/dcgm/<cluster>/<YYYY-MM-DD>/<DCGM metric>.json          Prometheus query_range
    metrics/kube/<cluster>/<YYYY-MM-DD>/<kube metric>.json          Prometheus query_range
                                        (KUBE_METRICS, and VOLUME_METRICS: PVs, claims, pod volumes)
    reference/org_mapping.csv                                       project -> team -> cost center

Conventions a consumer must know:

* A sample at unix time ``t`` describes the interval ``[t, t + step_seconds)``.  Nodes exist from
  their (hour aligned) join time to the end of the window; pods exist on ``[start, end)``, and
  every pod series (kube_pod_* and the DCGM series carrying ``pod``) has samples exactly at the
  step times in that interval.  ``kube_pod_completion_time`` is the only exception: it has a
  single sample at ``t == end`` (the scrape right after the container terminated), one series
  per container, and only for pods that ended before the window end.
* Node-hour FOCUS lines exist for exactly the hours in which the node has ``kube_node_info``
  samples.  DCGM has a ~1 hour hole for one node (exporter down) while kube metrics continue.
* DCGM node label: ``Hostname`` everywhere except cluster index 1 (``gpu-west``) which uses the
  lowercase ``hostname`` (older exporter).  The value is the kube node name.
* Pod names are not unique over time (``jupyter-<user>-0`` is re-created); ``uid`` is.  The same
  pod name can also exist in two clusters at once: join on ``cluster`` too.
* ``label_team_id`` is the *user's* team; a user sometimes works on another team's project, so
  it can disagree with the org mapping of ``label_project_id``.  About 2 % of the tagged pods
  carry a misspelled project id that is not in ``reference/org_mapping.csv``.
"""

from __future__ import annotations

import csv
import hashlib
import heapq
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from gpucost.synth import generator_slurm

__all__ = [
    "DCGM_METRICS",
    "FOCUS_COLUMNS",
    "KUBE_METRICS",
    "VOLUME_METRICS",
    "generate_month",
]

FOCUS_COLUMNS: tuple[str, ...] = (
    "AvailabilityZone",
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceId",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "SkuId",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
)

DCGM_METRICS: tuple[str, ...] = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
)

KUBE_METRICS: tuple[str, ...] = (
    "kube_node_info",
    "kube_node_status_capacity",
    "kube_pod_info",
    "kube_pod_labels",
    "kube_pod_container_resource_requests",
    "kube_pod_container_info",
    "kube_pod_start_time",
    "kube_pod_completion_time",
)

# --------------------------------------------------------------------------------------------
# Static reference data
# --------------------------------------------------------------------------------------------

TEN_DP = Decimal("1E-10")
CENT = Decimal("0.01")
DISCOUNT = Decimal("0.12")  # negotiated discount on EC2 (EffectiveCost = 0.88 * BilledCost)
TAX_RATE = Decimal("0.08")
CREDIT_AMOUNT = Decimal("-500")
EBS_GP3_GB_MONTH = Decimal("0.08")
S3_STANDARD_GB_MONTH = Decimal("0.023")
EGRESS_PER_GB = Decimal("0.09")
DRIVER_VERSION = "550.90.07"
DCGM_PORT = 9400
SECONDS_PER_DAY = 86400
GIB = 1024**3


@dataclass(frozen=True, slots=True)
class InstanceType:
    name: str
    gpu_model: str
    hourly_price: Decimal
    vcpus: int
    memory_bytes: int
    fb_total_mib: int
    max_watts: float
    idle_watts: float
    pci_bus_ids: tuple[str, ...]


P5 = InstanceType(
    name="p5.48xlarge",
    gpu_model="NVIDIA H100 80GB HBM3",
    hourly_price=Decimal("98.32"),
    vcpus=192,
    memory_bytes=2048 * GIB,
    fb_total_mib=81559,
    max_watts=700.0,
    idle_watts=70.0,
    pci_bus_ids=tuple(
        f"00000000:{b}:00.0" for b in ("53", "64", "75", "86", "97", "A8", "B9", "CA")
    ),
)
P4D = InstanceType(
    name="p4d.24xlarge",
    gpu_model="NVIDIA A100-SXM4-40GB",
    hourly_price=Decimal("32.7726"),
    vcpus=96,
    memory_bytes=1152 * GIB,
    fb_total_mib=40960,
    max_watts=400.0,
    idle_watts=52.0,
    pci_bus_ids=tuple(
        f"00000000:{b}.0"
        for b in ("10:1C", "10:1D", "20:1C", "20:1D", "90:1C", "90:1D", "A0:1C", "A0:1D")
    ),
)
INSTANCE_TYPES = (P5, P4D)
GPUS_PER_NODE = 8

# (region id, region name, office-hours UTC offset in hours)
SITES = (
    ("us-east-1", "US East (N. Virginia)", -4),
    ("us-west-2", "US West (Oregon)", -7),
    ("us-east-2", "US East (Ohio)", -4),
    ("eu-west-1", "Europe (Ireland)", 1),
)

# team id, team name, cost center, ((project id, project name, misspelling), ...)
TEAMS: tuple[tuple[str, str, str, tuple[tuple[str, str, str], ...]], ...] = (
    (
        "ml-research",
        "ML Research",
        "CC-4100",
        (
            ("llm-pretrain", "LLM Pretraining", "llm-pretrian"),
            ("multimodal-lab", "Multimodal Lab", "multimodel-lab"),
            ("rl-agents", "RL Agents", "rl-agent"),
        ),
    ),
    (
        "nlp",
        "Natural Language Processing",
        "CC-4200",
        (
            ("rag-search", "RAG Search", "rag-serach"),
            ("translate-v3", "Translation v3", "translate_v3"),
            ("summarizer", "Summarizer", "sumarizer"),
        ),
    ),
    (
        "vision",
        "Computer Vision",
        "CC-4300",
        (
            ("detector-v2", "Object Detector v2", "detector-2"),
            ("seg-anything", "Segment Anything", "seg-anythng"),
            ("video-tagging", "Video Tagging", "video-taging"),
        ),
    ),
    (
        "recsys",
        "Recommendations",
        "CC-4400",
        (
            ("feed-ranker", "Feed Ranker", "feed-ranekr"),
            ("ads-ctr", "Ads CTR Model", "ads_ctr"),
        ),
    ),
    (
        "platform",
        "ML Platform",
        "CC-4500",
        (
            ("eval-harness", "Evaluation Harness", "eval-harnes"),
            ("model-gateway", "Model Gateway", "model-gatway"),
        ),
    ),
)
SERVING_PROJECTS = (
    "rag-search",
    "translate-v3",
    "summarizer",
    "detector-v2",
    "video-tagging",
    "feed-ranker",
    "ads-ctr",
    "model-gateway",
)
USERS = (
    "alice",
    "bob",
    "carol",
    "dave",
    "erin",
    "frank",
    "grace",
    "heidi",
    "ivan",
    "judy",
    "mallory",
    "niaj",
    "olivia",
    "peggy",
    "rupert",
    "sybil",
    "trent",
    "victor",
    "walter",
    "xavier",
    "yasmin",
    "zoe",
    "u1234",
    "u2871",
    "u3310",
)
K8S_ALNUM = "bcdfghjklmnpqrstvwxz2456789"

# scheduling priority (lower first) and the PriorityClass name per workload kind
KIND_PRIORITY = {"inference": 0, "training": 1, "finetune": 2, "notebook": 2, "eval": 3, "etl": 3}
PRIORITY_CLASS = {
    "inference": "inference-critical",
    "training": "training-high",
    "finetune": "training-default",
    "notebook": "interactive",
    "eval": "batch-low",
    "etl": "batch-low",
}
# targeted share of a cluster's GPU capacity and the mean GPU-hours of one pod of the kind
KIND_SHARE = {"training": 0.42, "finetune": 0.11, "notebook": 0.05, "eval": 0.018}
# weight for picking which workloads lose their project label (notebooks are the worst)
UNTAG_WEIGHT = {
    "notebook": 2.0,
    "eval": 1.4,
    "finetune": 1.0,
    "training": 0.6,
    "inference": 0.8,
    "etl": 1.0,
}
# The shared-GPU inference node of the first cluster (an H100 node kept out of the scheduler):
# GPU -> its MIG instances (GPU_I_ID, profile), or its number of time-sliced replicas; the other
# GPUs stay idle.
SHARED_NODE_MIG: dict[int, tuple[tuple[str, str], ...]] = {
    0: tuple((str(i), "1g.10gb") for i in range(7, 14)),
    1: (("2", "3g.40gb"), ("3", "2g.20gb"), ("9", "1g.10gb"), ("10", "1g.10gb")),
}
SHARED_NODE_REPLICAS: dict[int, int] = {2: 4, 3: 2}
NOTEBOOK_MAX_WAIT = 3600
# hard mode: this project is handed to this team halfway through the window
HANDOFF_PROJECT = ("summarizer", "recsys")
# hard mode pod specs: opaque dataset names (two words), evaluation suites, a public base model
DATASET_WORDS = (
    ("web", "news", "code", "clicks", "frames", "speech", "dialog", "docs", "scans", "logs"),
    ("crawl", "dump", "mix", "shards", "corpus", "set", "pool", "archive"),
)
EVAL_SUITES = ("mmlu,gsm8k", "helm-lite", "coco-val", "lm-eval-core", "internal-regression")
PUBLIC_BASE_MODEL = "hf://meta-llama/Llama-3.1-8B"


# --------------------------------------------------------------------------------------------
# Model objects
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Gpu:
    index: int
    uuid: str
    idle_w: float
    idle_fb: str
    labels: dict[str, str]


@dataclass(slots=True)
class Node:
    idx: int
    cluster: int
    name: str
    ip: str
    instance_id: str
    zone: str
    itype: InstanceType
    join: int
    gpus: list[Gpu]
    info_labels: dict[str, str]
    free: list[bool] = field(default_factory=lambda: [True] * GPUS_PER_NODE)
    free_count: int = GPUS_PER_NODE
    reserved: bool = False  # kept out of the scheduler: the shared-GPU (MIG / time-sliced) node


@dataclass(slots=True)
class Cluster:
    idx: int
    name: str
    region: str
    region_name: str
    tz_hours: int
    sub_account_id: str
    sub_account_name: str
    hostname_label: str
    nodes: list[Node] = field(default_factory=list)


@dataclass(slots=True)
class Container:
    name: str
    image: str
    image_id: str
    container_id: str
    cpu: str
    memory: str
    gpus: int
    gpu_resource: str = (
        "nvidia_com_gpu"  # as kube-state-metrics names it: MIG and shared GPUs differ
    )
    # the pod spec (Kubernetes API, not kube-state-metrics): hard mode writes it to inventory/kube
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    working_dir: str = ""


@dataclass(slots=True)
class Pod:
    seq: int
    cluster: int
    kind: str
    name: str
    namespace: str
    uid: str
    user: str
    user_team: str
    project: str
    gpus: int
    arrival: int
    duration: int
    fixed_end: int
    template: str
    created_by_kind: str
    created_by_name: str
    app: str
    containers: list[Container]
    prof: dict[str, Any]
    node: Node | None = None
    gpu_idx: tuple[int, ...] = ()
    start: int = -1
    end: int = -1
    pod_ip: str = ""
    tag_state: str = "tagged"  # tagged | untagged | typo
    labels: dict[str, str] = field(default_factory=dict)
    volume_claims: list[str] = field(default_factory=list)  # PVCs the pod spec mounts (hard mode)
    creator: str = ""  # who created the workload, stamped by an admission webhook ("" if none)


@dataclass(slots=True)
class Gap:
    node: int
    start: int
    end: int


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _uuid(rng: random.Random) -> str:
    h = _hex(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"


def _gpu_uuid(rng: random.Random) -> str:
    """A GPU UUID as nvidia-smi and the DCGM exporter print it: GPU-8-4-4-4-12 hex."""
    h = _hex(rng, 32)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _gpu_labels(
    cl: Cluster, node: str, ip: str, itype: InstanceType, g: int, uuid: str
) -> dict[str, str]:
    """The DCGM exporter's labels of GPU ``g`` of a Kubernetes node."""
    return {
        "DCGM_FI_DRIVER_VERSION": DRIVER_VERSION,
        cl.hostname_label: node,
        "UUID": uuid,
        "cluster": cl.name,
        "device": f"nvidia{g}",
        "gpu": str(g),
        "instance": f"{ip}:{DCGM_PORT}",
        "job": "dcgm-exporter",
        "modelName": itype.gpu_model,
        "pci_bus_id": itype.pci_bus_ids[g],
    }


def _node_info_labels(
    cl: Cluster, node: str, ip: str, zone: str, instance_id: str
) -> dict[str, str]:
    """kube_node_info's labels of a node of ``cl``."""
    return {
        "cluster": cl.name,
        "container_runtime_version": "containerd://1.7.22",
        "internal_ip": ip,
        "kernel_version": "5.10.225-213.878.amzn2.x86_64",
        "kubelet_version": "v1.30.4-eks-a737599" if cl.idx % 2 == 0 else "v1.31.0-eks-a737599",
        "node": node,
        "os_image": "Amazon Linux 2",
        "provider_id": f"aws:///{zone}/{instance_id}",
    }


def _suffix(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(K8S_ALNUM) for _ in range(n))


def _poisson(rng: random.Random, lam: float) -> int:
    if lam <= 0:
        return 0
    if lam > 30:  # normal approximation, only hit by very large fleets
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit = math.exp(-lam)
    k, p = 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def _loguniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _align(seconds: float, step: int) -> int:
    return max(step, round(seconds / step) * step)


def _money(value: Decimal) -> str:
    return format(value.quantize(TEN_DP, rounding=ROUND_HALF_EVEN), "f")


def _iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sorted_labels(labels: dict[str, str]) -> dict[str, str]:
    return dict(sorted(labels.items()))


def _image_id(image: str) -> str:
    repo = image.rsplit(":", 1)[0]
    digest = hashlib.sha256(image.encode()).hexdigest()
    return f"docker-pullable://{repo}@sha256:{digest}"


def _sku(name: str) -> str:
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    digest = hashlib.sha256(name.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:16])


def _cluster_name(i: int) -> str:
    return ("gpu-east", "gpu-west")[i] if i < 2 else f"gpu-c{i + 1}"


def _node_name(ip: str, region: str) -> str:
    dashed = "ip-" + ip.replace(".", "-")
    if region == "us-east-1":
        return f"{dashed}.ec2.internal"
    return f"{dashed}.{region}.compute.internal"


# --------------------------------------------------------------------------------------------
# Fleet and organisation
# --------------------------------------------------------------------------------------------


def _build_org(rng: random.Random) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Return (user -> team, project -> team, project -> misspelling)."""
    users = list(USERS)
    rng.shuffle(users)
    team_ids = [t[0] for t in TEAMS]
    user_team = {u: team_ids[i % len(team_ids)] for i, u in enumerate(users)}
    project_team = {p[0]: t[0] for t in TEAMS for p in t[3]}
    typo = {p[0]: p[2] for t in TEAMS for p in t[3]}
    return dict(sorted(user_team.items())), project_team, typo


def _build_fleet(
    rng: random.Random, nodes: int, clusters: int, t0: int, window_end: int
) -> list[Cluster]:
    account_rng = random.Random(rng.getrandbits(64))
    out: list[Cluster] = []
    for c in range(clusters):
        region, region_name, tz = SITES[c % len(SITES)]
        name = _cluster_name(c)
        out.append(
            Cluster(
                idx=c,
                name=name,
                region=region,
                region_name=region_name,
                tz_hours=tz,
                sub_account_id=str(account_rng.randrange(10**11, 10**12)),
                sub_account_name=f"acme-ml-{name}",
                hostname_label="hostname" if c == 1 else "Hostname",
            )
        )
    used_ips: set[str] = set()
    window_hours = (window_end - t0) // 3600
    late_node = nodes - 1 if nodes >= 2 else -1
    late_offset_h = 0
    if late_node >= 0:
        late_offset_h = min(rng.randint(2 * 24 + 6, 4 * 24), max(1, window_hours // 3))
    for i in range(nodes):
        cl = out[i % clusters]
        itype = INSTANCE_TYPES[(i // clusters) % 2]
        while True:
            ip = f"10.{cl.idx + 1}.{rng.randrange(0, 64)}.{rng.randrange(1, 255)}"
            if ip not in used_ips:
                used_ips.add(ip)
                break
        name = _node_name(ip, cl.region)
        zone = cl.region + "abcd"[rng.randrange(4 if cl.region == "us-east-1" else 3)]
        instance_id = "i-0" + _hex(rng, 16)
        join = t0 + late_offset_h * 3600 if i == late_node else t0
        gpus = []
        for g in range(GPUS_PER_NODE):
            uuid = _gpu_uuid(rng)
            gpus.append(
                Gpu(
                    index=g,
                    uuid=uuid,
                    idle_w=itype.idle_watts + rng.uniform(-4.0, 6.0),
                    idle_fb=str(rng.choice((0, 1, 1, 3, 5))),
                    labels=_gpu_labels(cl, name, ip, itype, g, uuid),
                )
            )
        info_labels = _node_info_labels(cl, name, ip, zone, instance_id)
        cl.nodes.append(
            Node(
                idx=i,
                cluster=cl.idx,
                name=name,
                ip=ip,
                instance_id=instance_id,
                zone=zone,
                itype=itype,
                join=join,
                gpus=gpus,
                info_labels=info_labels,
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# Workloads
# --------------------------------------------------------------------------------------------


def _arrival_weight(kind: str, weekday: int, hour: int) -> float:
    workday = weekday < 5
    office = 9 <= hour < 18
    if kind == "notebook":
        if not workday:
            return 0.04 if 10 <= hour < 17 else 0.0
        return 1.0 if 8 <= hour < 17 else 0.0
    if kind == "eval":  # CI-driven evals run around the clock
        return (1.6 if office else 0.7) if workday else 0.5
    if workday:
        if office:
            return 2.2
        return 0.9 if 18 <= hour < 23 else 0.3
    return 0.3


def _week_mean(kind: str) -> float:
    return sum(_arrival_weight(kind, d, h) for d in range(7) for h in range(24)) / 168.0


class _PodFactory:
    def __init__(
        self,
        rng: random.Random,
        cluster: Cluster,
        user_team: dict[str, str],
        project_team: dict[str, str],
        step: int,
        *,
        hard: bool = False,
        handoff_at: int = 0,
        spec_seed: str = "",
    ) -> None:
        self.rng = rng
        self.cluster = cluster
        self.user_team = user_team
        self.users = list(user_team)
        self.team_projects: dict[str, list[str]] = {}
        for p, t in project_team.items():
            self.team_projects.setdefault(t, []).append(p)
        self.all_projects = list(project_team)
        self.project_team = project_team
        self.step = step
        self.seq = 0
        self.used_names: set[str] = set()
        # hard mode (the attribution benchmark): each user has a fixed mix of two or three projects,
        # CI service accounts without a user, images shared across projects, names that do not say
        # the project, train -> eval pipelines, and one project handed to another team mid-window
        self.hard = hard
        self.handoff_at = handoff_at
        self.user_projects: dict[str, list[tuple[str, float]]] = {}
        self.user_last: dict[str, str] = {}
        if hard:
            for u in self.users:
                own = sorted(self.team_projects[self.user_team[u]])
                picks = rng.sample(own, min(2, len(own)))
                if rng.random() < 0.5:
                    picks.append(rng.choice(sorted(set(self.all_projects) - set(own))))
                weights = sorted((rng.uniform(0.2, 1.0) for _ in picks), reverse=True)
                self.user_projects[u] = list(zip(picks, weights, strict=True))
        # pod specs (hard mode): their own random stream, so the month's pods stay the same
        self.spec_rng = random.Random(spec_seed or f"{cluster.name}/pod-specs")
        self.datasets, self.team_datasets = _build_datasets(project_team)
        self.project_jobs: dict[str, str] = {}  # the latest training / fine-tune job per project

    def _unique(self, make: Callable[[], str]) -> str:
        while True:
            name = make()
            if name not in self.used_names:
                self.used_names.add(name)
                return name

    def _project_for(self, user: str) -> str:
        rng = self.rng
        if self.hard:
            # people work in streaks: mostly the project of their previous job, sometimes another
            last = self.user_last.get(user)
            if last is not None and rng.random() < 0.8:
                return last
            projects, weights = zip(*self.user_projects[user], strict=True)
            self.user_last[user] = rng.choices(projects, weights)[0]
            return self.user_last[user]
        own = self.team_projects[self.user_team[user]]
        if rng.random() < 0.85:
            return rng.choice(own)
        return rng.choice(self.all_projects)

    def _container(self, name: str, image: str, cpu: str, mem: int, gpus: int) -> Container:
        return Container(
            name=name,
            image=image,
            image_id=_image_id(image),
            container_id="containerd://" + _hex(self.rng, 64),
            cpu=cpu,
            memory=str(mem),
            gpus=gpus,
        )

    def make(
        self,
        kind: str,
        arrival: int,
        *,
        user: str | None = None,
        project: str | None = None,
        gpus: int | None = None,
        duration: int | None = None,
        fixed_end: int = 0,
        template: str | None = None,
        rs_name: str | None = None,
        reads: str | None = None,
    ) -> Pod:
        rng, step = self.rng, self.step
        user = user or rng.choice(self.users)
        project = project or self._project_for(user)
        team = self.user_team[user]
        if self.hard and project == HANDOFF_PROJECT[0] and arrival >= self.handoff_at:
            # the project moved to another team: its jobs now come from that team's people
            team = HANDOFF_PROJECT[1]
            user = rng.choice(sorted(u for u, t in self.user_team.items() if t == team))
        if self.hard and kind in ("training", "finetune", "eval") and rng.random() < 0.1:
            user = f"system:serviceaccount:team-{team}:ci"  # a pipeline's service account
        namespace = f"team-{team}"
        vague = self.hard and rng.random() < 0.5  # names and images that do not say the project
        prof: dict[str, Any] = {}
        if kind == "training":
            gpus = gpus or (8 if rng.random() < 0.6 else 4)
            duration = duration or _align(_loguniform(rng, 6, 72) * 3600, step)
            job = self._unique(lambda: f"{project}-train-{_hex(rng, 5)}")
            if vague:
                job = self._unique(lambda: f"exp-{_hex(rng, 5)}")
            app = "train" if vague else f"{project}-train"
            name, cb_kind, cb_name = f"{job}-0", "PyTorchJob", job
            tag = rng.choice(("24.05-py3", "24.07-py3", "24.09-py3"))
            main = self._container(
                "pytorch", f"nvcr.io/nvidia/pytorch:{tag}", str(gpus * 10), gpus * 100 * GIB, gpus
            )
            prof = {
                "base": rng.uniform(72, 96),
                "noise": rng.uniform(2, 5),
                "ckpt": max(2, round(rng.uniform(1800, 5400) / step)),
                "phase": rng.randrange(1000),
                "dip": rng.uniform(5, 30),
                "fb": rng.uniform(0.80, 0.97),
            }
            containers = [main]
        elif kind == "finetune":
            gpus = gpus or rng.choice((1, 1, 2, 2, 4, 4, 3))
            duration = duration or _align(_loguniform(rng, 1, 12) * 3600, step)
            job = self._unique(lambda: f"{project}-ft-{_hex(rng, 5)}")
            if vague:
                job = self._unique(lambda: f"ft-{_hex(rng, 5)}")
            name, cb_kind, cb_name = f"{job}-{_suffix(rng, 5)}", "Job", job
            app = "ft" if vague else f"{project}-ft"
            image = f"ghcr.io/acme/{project}-finetune:0.{rng.randint(3, 9)}.{rng.randint(0, 12)}"
            if vague:
                image = f"ghcr.io/acme/trainer:0.{rng.randint(3, 9)}.{rng.randint(0, 12)}"
            main = self._container("trainer", image, str(gpus * 8), gpus * 64 * GIB, gpus)
            prof = {
                "base": rng.uniform(52, 88),
                "noise": rng.uniform(4, 9),
                "ckpt": max(2, round(rng.uniform(1200, 3600) / step)),
                "phase": rng.randrange(1000),
                "dip": rng.uniform(5, 25),
                "fb": rng.uniform(0.45, 0.90),
            }
            containers = [main]
        elif kind == "notebook":
            gpus = 1
            duration = duration or _align(rng.uniform(1, 8) * 3600, step)
            name = f"jupyter-{user}-0"
            cb_kind, cb_name, app = "StatefulSet", f"jupyter-{user}", "jupyter"
            image = rng.choice(
                (
                    "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11",
                    "quay.io/jupyter/tensorflow-notebook:cuda-2024-09-16",
                    "nvcr.io/nvidia/pytorch:24.05-py3",
                )
            )
            main = self._container("notebook", image, "4", 32 * GIB, 1)
            prof = {
                "p_on": rng.uniform(0.03, 0.12),
                "p_off": rng.uniform(0.2, 0.5),
                "burst": rng.uniform(35, 95),
                "active": False,
                "fb": rng.uniform(0.05, 0.5),
            }
            containers = [main]
        elif kind == "inference":
            assert gpus is not None and duration is not None and rs_name is not None
            name = self._unique(lambda: f"{rs_name}-{_suffix(rng, 5)}")
            cb_kind, cb_name, app = "ReplicaSet", rs_name, f"{project}-infer"
            image = rng.choice(
                (
                    f"ghcr.io/acme/{project}-server:1.{rng.randint(2, 6)}.{rng.randint(0, 9)}",
                    "vllm/vllm-openai:v0.5.4",
                    "nvcr.io/nvidia/tritonserver:24.05-py3",
                )
            )
            main = self._container("server", image, str(gpus * 6), gpus * 48 * GIB, gpus)
            side = self._container(
                "istio-proxy", "docker.io/istio/proxyv2:1.22.3", "0.1", 128 * 1024**2, 0
            )
            lo = rng.uniform(18, 32)
            prof = {
                "lo": lo,
                "hi": lo + rng.uniform(15, 30),
                "noise": rng.uniform(2, 6),
                "fb": rng.uniform(0.55, 0.92),
            }
            containers = [main, side]
        elif kind == "eval":
            gpus = gpus or rng.choice((1, 1, 2))
            duration = duration or _align(_loguniform(rng, 600, 7200), step)
            job = self._unique(lambda: f"{project}-eval-{_hex(rng, 5)}")
            if self.hard:
                job = self._unique(lambda: f"eval-{_hex(rng, 5)}")
            name, cb_kind, cb_name, app = f"{job}-{_suffix(rng, 5)}", "Job", job, "eval-harness"
            image = f"ghcr.io/acme/eval-harness:0.9.{rng.randint(0, 7)}"
            main = self._container("eval", image, str(gpus * 4), gpus * 32 * GIB, gpus)
            prof = {
                "base": rng.uniform(40, 92),
                "noise": rng.uniform(5, 12),
                "ckpt": 0,
                "phase": 0,
                "dip": 0.0,
                "fb": rng.uniform(0.3, 0.8),
            }
            containers = [main]
        else:  # pragma: no cover - programming error
            raise ValueError(kind)
        prof["eff"] = rng.uniform(0.75, 1.0)
        prof["ratio"] = rng.uniform(0.82, 0.98)
        claims: list[str] = []
        if self.hard:
            claims = self._spec(kind, containers[0], project, team, user, cb_name, vague, reads)
        self.seq += 1
        return Pod(
            seq=self.seq,
            cluster=self.cluster.idx,
            kind=kind,
            name=name,
            namespace=namespace,
            uid=_uuid(rng),
            user=user,
            user_team=team,
            project=project,
            gpus=gpus,
            arrival=arrival,
            duration=duration,
            fixed_end=fixed_end,
            template=template or f"{self.cluster.idx}/{self.seq}",
            created_by_kind=cb_kind,
            created_by_name=cb_name,
            app=app,
            containers=containers,
            prof=prof,
            volume_claims=claims,
        )

    def _spec(
        self,
        kind: str,
        main: Container,
        project: str,
        team: str,
        user: str,
        job: str,
        vague: bool,
        reads: str | None,
    ) -> list[str]:
        """Fill the main container's command / args / workingDir the way these jobs are launched;
        return the PersistentVolumeClaims the pod mounts. What names the project is partial, as in
        real clusters: a vague job's code lives in its team's monorepo and its config is named after
        the run; it reads one of its project's datasets (opaque names) or a dataset the whole team
        shares; fine-tunes and evaluations read a checkpoint (an earlier job's output, or a public
        base model); a notebook mounts its owner's workspace and, half the time, a dataset cache."""
        rng = self.spec_rng
        own = self.datasets[project]
        dataset = self.team_datasets[team] if rng.random() < 0.3 else rng.choice(own)
        data = f"s3://acme-datasets/{dataset}/"
        output = f"s3://acme-checkpoints/{team}/{job}/"
        repo = f"ml-{team}" if vague else project
        claims: list[str] = []
        if kind == "training":
            config = f"configs/{job}.yaml" if vague else f"configs/{project}/base.yaml"
            main.command = ["torchrun"]
            main.args = [f"--nproc_per_node={main.gpus}", "train.py", "--config", config]
            main.args += ["--data", data, "--output", output]
            main.working_dir = f"/workspace/{repo}"
            self.project_jobs[project] = job
        elif kind == "finetune":
            parent = self.project_jobs.get(project) if rng.random() < 0.6 else None
            base = f"s3://acme-checkpoints/{team}/{parent}/final" if parent else PUBLIC_BASE_MODEL
            main.command = ["python", "finetune.py"]
            main.args = ["--base", base, "--data", data, "--output", output]
            main.working_dir = f"/workspace/{repo}"
            self.project_jobs[project] = job
        elif kind == "eval":
            parent = reads or (self.project_jobs.get(project) if rng.random() < 0.7 else None)
            model = f"s3://acme-checkpoints/{team}/{parent}/final" if parent else PUBLIC_BASE_MODEL
            main.command = ["python", "-m", "eval_harness"]
            main.args = ["--model", model, "--tasks", rng.choice(EVAL_SUITES)]
            main.working_dir = "/opt/eval-harness"
        elif kind == "notebook":
            main.command = ["start-notebook.py"]
            main.args = ["--ServerApp.root_dir=/home/jovyan"]
            main.working_dir = "/home/jovyan"
            claims = [f"ws-{user}"] + ([f"{dataset}-cache"] if rng.random() < 0.5 else [])
        else:  # inference: the server loads whatever the deployment mounted
            main.command = ["python", "-m", "server"]
            main.args = ["--model", "/models/current", "--port", "8000"]
        return claims


def _build_datasets(project_team: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Two opaque dataset names per project (they do not say the project) and one per team that all
    its projects read. Fixed by the project list, like a data catalogue."""
    words = sorted(f"{a}-{b}" for a in DATASET_WORDS[0] for b in DATASET_WORDS[1])
    random.Random("datasets").shuffle(words)
    names = iter(words)
    projects = {p: [next(names), next(names)] for p in sorted(project_team)}
    teams = {t: next(names) for t in sorted(set(project_team.values()))}
    return projects, teams


def _cluster_arrivals(
    factory: _PodFactory, cluster: Cluster, t0: int, window_end: int, step: int
) -> list[Pod]:
    rng = factory.rng
    capacity = GPUS_PER_NODE * sum(1 for n in cluster.nodes if not n.reserved)
    pods: list[Pod] = []
    # Inference deployments: run the whole window, re-deployed (new ReplicaSet) every few days.
    n_deploy = max(1, round(0.15 * capacity / 3.0))
    serving = list(SERVING_PROJECTS)
    rng.shuffle(serving)
    for d in range(n_deploy):
        project = serving[d % len(serving)]
        team = factory.project_team[project]
        owners = [u for u, t in factory.user_team.items() if t == team]
        user = rng.choice(owners)
        gpus = rng.choice((1, 1, 2))
        replicas = rng.choice((1, 2, 2, 3))
        t, gen = t0, 0
        while t < window_end:
            nxt = t + rng.randint(2, 9) * SECONDS_PER_DAY + rng.randrange(0, 24) * 3600
            rs = f"{project}-infer-{_suffix(rng, rng.choice((6, 8, 9, 10)))}"
            for _ in range(replicas):
                pods.append(
                    factory.make(
                        "inference",
                        t,
                        user=user,
                        project=project,
                        gpus=gpus,
                        duration=nxt - t,
                        fixed_end=nxt,
                        template=f"{cluster.idx}/deploy{d}/{gen}",
                        rs_name=rs,
                    )
                )
            t, gen = nxt, gen + 1
    # Mean GPU-hours per pod for each kind (matches the distributions in _PodFactory.make).
    gpu_hours = {
        "training": 6.4 * (66 / math.log(12)),
        "finetune": 2.43 * (11 / math.log(12)),
        "notebook": 4.5,
        "eval": 1.33 * ((7200 - 600) / 3600 / math.log(12)),
    }
    rates = {k: KIND_SHARE[k] * capacity / gpu_hours[k] / _week_mean(k) for k in KIND_SHARE}
    # A backlog of training jobs submitted before the window so day one is not an empty cluster.
    for _ in range(round(0.45 * capacity / 6.4)):
        pods.append(factory.make("training", t0))
    slots = 3600 // step
    tz = timedelta(hours=cluster.tz_hours)
    for h in range((window_end - t0) // 3600):
        t_h = t0 + h * 3600
        local = datetime.fromtimestamp(t_h, UTC) + tz
        for kind in ("training", "finetune", "notebook", "eval"):
            lam = rates[kind] * _arrival_weight(kind, local.weekday(), local.hour)
            for _ in range(_poisson(rng, lam)):
                pod = factory.make(kind, t_h + rng.randrange(slots) * step)
                pods.append(pod)
                if factory.hard and kind == "training" and rng.random() < 0.3:
                    # a pipeline: the same user evaluates the run when it ends
                    pods.append(
                        factory.make(
                            "eval",
                            pod.arrival + pod.duration,
                            user=pod.user if not pod.user.startswith("system:") else None,
                            project=pod.project,
                            reads=pod.created_by_name,
                        )
                    )
    pods.sort(key=lambda p: (p.arrival, p.seq))
    return pods


def _schedule(
    cluster: Cluster, arrivals: list[Pod], t0: int, window_end: int, step: int, pod_ip_base: int
) -> list[Pod]:
    """Event-driven bin-packing scheduler; returns the pods that started, in start order."""
    nodes = [n for n in cluster.nodes if not n.reserved]
    joins = sorted({n.join for n in nodes if n.join > t0})
    running: list[tuple[int, int, Pod]] = []
    queue: list[Pod] = []
    started: list[Pod] = []
    notebook_busy: dict[str, int] = {}
    ai = ji = 0
    ip_counter = pod_ip_base
    while True:
        cands = []
        if ai < len(arrivals):
            cands.append(arrivals[ai].arrival)
        if running:
            cands.append(running[0][0])
        if ji < len(joins):
            cands.append(joins[ji])
        if not cands:
            break
        t = min(cands)
        if t >= window_end:
            break
        while running and running[0][0] <= t:
            _, _, done = heapq.heappop(running)
            assert done.node is not None
            for g in done.gpu_idx:
                done.node.free[g] = True
            done.node.free_count += len(done.gpu_idx)
        while ai < len(arrivals) and arrivals[ai].arrival <= t:
            queue.append(arrivals[ai])
            ai += 1
        while ji < len(joins) and joins[ji] <= t:
            ji += 1
        if not queue:
            continue
        queue.sort(key=lambda p: (KIND_PRIORITY[p.kind], p.arrival, p.seq))
        waiting: list[Pod] = []
        for pod in queue:
            if pod.kind == "notebook" and (
                t - pod.arrival > NOTEBOOK_MAX_WAIT or notebook_busy.get(pod.user, 0) > t
            ):
                continue  # user gave up, or already has a running server
            best: Node | None = None
            for node in nodes:
                if (
                    node.join <= t
                    and node.free_count >= pod.gpus
                    and (best is None or node.free_count < best.free_count)
                ):
                    best = node
            if best is None:
                waiting.append(pod)
                continue
            idx = tuple(i for i, f in enumerate(best.free) if f)[: pod.gpus]
            for g in idx:
                best.free[g] = False
            best.free_count -= pod.gpus
            pod.node, pod.gpu_idx, pod.start = best, idx, t
            pod.end = max(pod.fixed_end, t + step) if pod.fixed_end else t + pod.duration
            n = ip_counter
            ip_counter += 1
            pod.pod_ip = f"10.{cluster.idx + 1}.{64 + (n // 254) % 192}.{1 + n % 254}"
            if pod.kind == "notebook":
                notebook_busy[pod.user] = pod.end
            heapq.heappush(running, (pod.end, pod.seq, pod))
            started.append(pod)
        queue = waiting
    return started


def _add_shared_gpu_node(cluster: Cluster, rng: random.Random, idx: int, t0: int) -> Node:
    """An H100 inference node of ``cluster`` kept out of the scheduler: its GPUs are split into MIG
    instances or time-sliced between replicas (SHARED_NODE_MIG / SHARED_NODE_REPLICAS)."""
    itype = P5
    ip = f"10.{cluster.idx + 1}.{64 + rng.randrange(0, 64)}.{rng.randrange(1, 255)}"
    name = _node_name(ip, cluster.region)
    zone = cluster.region + "a"
    instance_id = "i-0" + _hex(rng, 16)
    gpus = []
    for g in range(GPUS_PER_NODE):
        uuid = _gpu_uuid(rng)
        gpus.append(Gpu(index=g, uuid=uuid, idle_w=itype.idle_watts, idle_fb="0",
                        labels=_gpu_labels(cluster, name, ip, itype, g, uuid)))  # fmt: skip
    info = _node_info_labels(cluster, name, ip, zone, instance_id)
    node = Node(idx=idx, cluster=cluster.idx, name=name, ip=ip, instance_id=instance_id, zone=zone,
                itype=itype, join=t0, gpus=gpus, info_labels=info, reserved=True)  # fmt: skip
    cluster.nodes.append(node)
    return node


def _shared_gpu_pods(factory: _PodFactory, node: Node, t0: int, window_end: int) -> list[Pod]:
    """Inference replicas on the shared node for the whole window: one per MIG instance (kube
    resource nvidia_com_mig_<profile>) and several per time-sliced GPU (nvidia_com_gpu_shared)."""
    rng = factory.rng
    pods: list[Pod] = []
    slots = [(g, mig) for g, instances in SHARED_NODE_MIG.items() for mig in instances]
    slots += [(g, None) for g, n in SHARED_NODE_REPLICAS.items() for _ in range(n)]
    projects = sorted(SERVING_PROJECTS)
    for i, (g, mig) in enumerate(slots):
        project = projects[i % len(projects)]
        team = factory.project_team[project]
        user = rng.choice(sorted(u for u, t in factory.user_team.items() if t == team))
        kind = f"mig-{mig[1].replace('.', '-')}" if mig else "ts"
        pod = factory.make("inference", t0, user=user, project=project, gpus=1,
                           duration=window_end - t0, fixed_end=window_end,
                           template=f"{node.cluster}/shared/{i}",
                           rs_name=f"{project}-{kind}-{_suffix(rng, 9)}")  # fmt: skip
        main = pod.containers[0]
        main.cpu, main.memory = "4", str(24 * GIB)
        if mig:
            main.gpu_resource = "nvidia_com_mig_" + mig[1].replace(".", "_")
            pod.prof["mig"] = mig
        else:
            main.gpu_resource = "nvidia_com_gpu_shared"
            pod.prof["shared"] = True
        pod.node, pod.gpu_idx, pod.start, pod.end = node, (g,), t0, window_end
        pod.pod_ip = f"10.{node.cluster + 1}.250.{1 + i}"
        pods.append(pod)
    return pods


def _cpu_only_pods(
    factory: _PodFactory, cluster: Cluster, t0: int, window_end: int, step: int
) -> list[Pod]:
    """Feature-ETL jobs that need no GPU but run on the GPU nodes (two or three a day): they hold
    cores and memory of the node, and pay for them from its CPU and memory parts."""
    rng = factory.rng
    nodes = [n for n in cluster.nodes if not n.reserved]
    pods: list[Pod] = []
    for day in range((window_end - t0) // SECONDS_PER_DAY):
        for _ in range(rng.randint(2, 3)):
            start = t0 + day * SECONDS_PER_DAY + rng.randrange(0, SECONDS_PER_DAY // step) * step
            candidates = [n for n in nodes if n.join <= start]
            if not candidates:
                continue
            user = rng.choice(factory.users)
            project = factory._project_for(user)
            job = factory._unique(lambda project=project: f"{project}-feature-etl-{_hex(rng, 5)}")
            cores = rng.choice((4, 8, 16))
            container = factory._container(
                "etl", f"ghcr.io/acme/feature-etl:1.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
                str(cores), cores * 4 * GIB, 0,
            )  # fmt: skip
            factory.seq += 1
            node = rng.choice(candidates)
            end = min(window_end, start + rng.randrange(1, 5) * 3600)
            pods.append(
                Pod(seq=factory.seq, cluster=cluster.idx, kind="etl",
                    name=f"{job}-{_suffix(rng, 5)}", namespace=f"team-{factory.user_team[user]}",
                    uid=_uuid(rng), user=user, user_team=factory.user_team[user], project=project,
                    gpus=0, arrival=start, duration=end - start, fixed_end=end,
                    template=f"{cluster.idx}/etl/{factory.seq}", created_by_kind="Job",
                    created_by_name=job, app="feature-etl", containers=[container], prof={},
                    node=node, gpu_idx=(), start=start, end=end,
                    pod_ip=f"10.{cluster.idx + 1}.251.{1 + len(pods) % 250}")
            )  # fmt: skip
    return pods


def _shared_node_series(
    node: Node, pods: list[Pod], ts: list[int], rng: random.Random, step: int, tz: int
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
            vals = _segment_values(p, gpu, node.itype, ts, rng, step, tz)
            extra: dict[str, str] = {}
            if p is not None:
                extra = {"container": p.containers[0].name, "namespace": p.namespace, "pod": p.name}
                if "mig" in p.prof:
                    extra |= {"GPU_I_ID": p.prof["mig"][0], "GPU_I_PROFILE": p.prof["mig"][1]}
            for metric, values in zip(DCGM_METRICS, vals, strict=True):
                labels = _sorted_labels({"__name__": metric, **gpu.labels, **extra})
                out[metric].append((labels, [values]))
            samples += len(DCGM_METRICS) * len(ts)
    return out, samples


def _assign_tags(
    pods: list[Pod], rng: random.Random, fraction: float, typo: dict[str, str]
) -> tuple[int, int]:
    """Decide which workloads lose their project label; returns (untagged pods, typo pods)."""
    templates: dict[str, list[Pod]] = {}
    for p in pods:
        templates.setdefault(p.template, []).append(p)
    keyed = []
    for i, (name, members) in enumerate(templates.items()):
        w = UNTAG_WEIGHT[members[0].kind]
        keyed.append((rng.random() ** (1.0 / w), -i, name))
    keyed.sort(reverse=True)
    target = round(fraction * len(pods))
    untagged = 0
    tagged_singles: list[str] = []
    for _, _, name in keyed:
        members = templates[name]
        if untagged + len(members) <= target:
            untagged += len(members)
            for p in members:
                p.tag_state = "untagged"
        elif len(members) == 1:
            tagged_singles.append(name)
    tagged_singles.sort()
    n_typo = min(len(tagged_singles), round(0.02 * len(pods)))
    for name in rng.sample(tagged_singles, n_typo):
        templates[name][0].tag_state = "typo"
    for members in templates.values():
        r = rng.random()
        for p in members:
            labels: dict[str, str] = {}
            if p.tag_state == "untagged":
                # 35 % team + user, 20 % team only, 20 % user only, 25 % nothing at all
                if r < 0.55:
                    labels["label_team_id"] = p.user_team
                if (r < 0.35 or 0.55 <= r < 0.75) and not p.user.startswith("system:"):
                    labels["label_user_id"] = p.user
            else:
                proj = typo[p.project] if p.tag_state == "typo" else p.project
                labels = {
                    "label_project_id": proj,
                    "label_team_id": p.user_team,
                    "label_user_id": p.user,
                }
                if p.user.startswith("system:"):
                    del labels["label_user_id"]
            p.labels = labels
    return untagged, n_typo


# --------------------------------------------------------------------------------------------
# Telemetry values
# --------------------------------------------------------------------------------------------


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
            hour = ((t + tz) % SECONDS_PER_DAY) / 3600.0
            cyc = 0.5 - 0.5 * math.cos((hour - 3.0) / 24.0 * 2 * math.pi)  # peak mid-afternoon
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


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------


def _write_matrix(path: Path, series: list[tuple[dict[str, str], list[str]]]) -> None:
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


def _dcgm_day(
    cluster: Cluster,
    day_pods: list[Pod],
    day_start: int,
    step: int,
    window_end: int,
    gap: Gap | None,
    rng: random.Random,
) -> tuple[dict[str, list], int]:
    n_steps = SECONDS_PER_DAY // step
    day_end = day_start + SECONDS_PER_DAY
    ts = list(range(day_start, day_end, step))
    tz = cluster.tz_hours * 3600
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
            shared, n = _shared_node_series(node, by_node.get(node.idx, []), window, rng, step, tz)
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
                vals = _segment_values(p, gpu, node.itype, tslice, rng, step, tz)
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
                    labels = _sorted_labels({"__name__": metric, **gpu.labels, **extra})
                    out[metric].append((labels, values))
    return out, samples


def _kube_day(
    cluster: Cluster, day_pods: list[Pod], day_start: int, step: int, window_end: int
) -> dict[str, list]:
    n_steps = SECONDS_PER_DAY // step
    day_end = day_start + SECONDS_PER_DAY
    ts = list(range(day_start, day_end, step))
    out: dict[str, list] = {m: [] for m in KUBE_METRICS}
    cname = cluster.name

    def pairs(ks: int, ke: int, value: str) -> list[str]:
        return [",".join([f'[{t},"{value}"]' for t in ts[ks:ke]])]

    for node in cluster.nodes:
        if node.join >= day_end:
            continue
        k0 = max(0, (node.join - day_start) // step)
        ones = pairs(k0, n_steps, "1")
        out["kube_node_info"].append(
            (_sorted_labels({"__name__": "kube_node_info", **node.info_labels}), ones)
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
            out["kube_pod_info"].append((_sorted_labels(info), ones))
            labels = {**base, "__name__": "kube_pod_labels", "label_app": p.app, **p.labels}
            out["kube_pod_labels"].append((_sorted_labels(labels), ones))
            start = {**base, "__name__": "kube_pod_start_time"}
            out["kube_pod_start_time"].append((_sorted_labels(start), pairs(ks, ke, str(p.start))))
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
                out["kube_pod_container_info"].append((_sorted_labels(cinfo), ones))
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
                        (_sorted_labels(req), pairs(ks, ke, value))
                    )
        if p.end < window_end and day_start <= p.end < day_end:
            for c in p.containers:
                done = {**base, "__name__": "kube_pod_completion_time", "container": c.name}
                out["kube_pod_completion_time"].append(
                    (_sorted_labels(done), [f'[{p.end},"{p.end}"]'])
                )
    return out


class _FocusWriter:
    """Streams FOCUS rows into one CSV per billing month and closes each month with the
    support, tax and credit lines."""

    def __init__(self, out_dir: Path, account_id: str, account_name: str) -> None:
        self.out_dir = out_dir
        self.account_id = account_id
        self.account_name = account_name
        self.month: tuple[int, int] | None = None
        self.fh: Any = None
        self.writer: Any = None
        self.usage_total = Decimal(0)
        self.lines = 0
        self.billed_total = Decimal(0)
        self.effective_total = Decimal(0)
        self.files = 0
        self.months: list[str] = []
        self.base: dict[str, str] = {}

    def _period(self) -> tuple[int, int]:
        assert self.month is not None
        y, m = self.month
        start = datetime(y, m, 1, tzinfo=UTC)
        end = datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=UTC)
        return int(start.timestamp()), int(end.timestamp())

    def open_month(self, ts: int) -> None:
        dt = datetime.fromtimestamp(ts, UTC)
        month = (dt.year, dt.month)
        if month == self.month:
            return
        self.close_month()
        self.month = month
        tag = f"{dt.year:04d}-{dt.month:02d}"
        self.months.append(tag)
        path = self.out_dir / "billing" / "focus" / tag / f"focus_export_{self.account_id}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = path.open("w", encoding="utf-8", newline="")
        self.writer = csv.writer(self.fh, lineterminator="\n")
        self.writer.writerow(FOCUS_COLUMNS)
        self.files += 1
        self.usage_total = Decimal(0)
        ps, pe = self._period()
        self.base = {
            "BillingAccountId": self.account_id,
            "BillingAccountName": self.account_name,
            "BillingCurrency": "USD",
            "BillingPeriodStart": _iso(ps),
            "BillingPeriodEnd": _iso(pe),
            "InvoiceId": f"INV-{tag}-0001",
            "InvoiceIssuerName": "Amazon Web Services, Inc.",
            "ProviderName": "AWS",
            "PublisherName": "Amazon Web Services, Inc.",
        }

    def row(self, **cols: str) -> None:
        rec = {**self.base, **cols}
        self.writer.writerow([rec.get(c, "") for c in FOCUS_COLUMNS])
        self.lines += 1
        billed = Decimal(rec["BilledCost"])
        self.billed_total += billed
        self.effective_total += Decimal(rec["EffectiveCost"])
        if rec["ChargeCategory"] == "Usage":
            self.usage_total += billed

    def close_month(self) -> None:
        if self.month is None:
            return
        ps, pe = self._period()
        period = {"ChargePeriodStart": _iso(ps), "ChargePeriodEnd": _iso(pe)}
        mgmt = {"SubAccountId": self.account_id, "SubAccountName": "acme-ml-management"}
        usage = self.usage_total
        support = (
            min(usage, Decimal(10000)) * Decimal("0.10")
            + max(Decimal(0), min(usage, Decimal(80000)) - 10000) * Decimal("0.07")
            + max(Decimal(0), min(usage, Decimal(250000)) - 80000) * Decimal("0.05")
            + max(Decimal(0), usage - 250000) * Decimal("0.03")
        )
        support = _money(max(Decimal(100), support).quantize(CENT, rounding=ROUND_HALF_EVEN))
        self.row(
            **period,
            **mgmt,
            BilledCost=support,
            ChargeCategory="Usage",
            ChargeDescription="AWS Support (Business)",
            ChargeFrequency="Recurring",
            ConsumedQuantity="1",
            ConsumedUnit="Month",
            ContractedCost=support,
            ContractedUnitPrice=support,
            EffectiveCost=support,
            ListCost=support,
            ListUnitPrice=support,
            PricingCategory="Standard",
            PricingQuantity="1",
            PricingUnit="Month",
            ServiceCategory="Management and Governance",
            ServiceName="AWS Support (Business)",
            SkuId=_sku("AWSSupportBusiness"),
            SkuPriceId=_sku("AWSSupportBusiness") + ".JRTCKXETXF.6YS6EN2CT7",
        )
        tax = _money((self.usage_total * TAX_RATE).quantize(CENT, rounding=ROUND_HALF_EVEN))
        self.row(
            **period,
            **mgmt,
            BilledCost=tax,
            ChargeCategory="Tax",
            ChargeDescription="Tax for billing period",
            ChargeFrequency="Recurring",
            ContractedCost=tax,
            EffectiveCost=tax,
            ListCost=tax,
            ServiceCategory="Other",
            ServiceName="Tax",
        )
        credit = _money(CREDIT_AMOUNT)
        self.row(
            **period,
            **mgmt,
            BilledCost=credit,
            ChargeCategory="Credit",
            ChargeDescription="AWS Activate promotional credit",
            ChargeFrequency="One-Time",
            ContractedCost=credit,
            EffectiveCost=credit,
            ListCost=credit,
            ServiceCategory="Compute",
            ServiceName="Amazon Elastic Compute Cloud",
        )
        self.fh.close()
        self.fh = self.writer = None
        self.month = None


def _tags(d: dict[str, str]) -> str:
    return json.dumps(d, separators=(",", ":"), sort_keys=True) if d else ""


@dataclass(slots=True)
class _Storage:
    cluster: Cluster
    kind: str  # ebs | s3
    resource_id: str
    size_gb: int
    tags: str
    start: int
    zone: str


def _build_storage(
    rng: random.Random, fleet: list[Cluster], project_team: dict[str, str]
) -> list[_Storage]:
    out: list[_Storage] = []
    projects = list(project_team)
    for cl in fleet:
        for node in cl.nodes:  # root volumes: shared infrastructure, untagged
            vol = "vol-0" + _hex(rng, 16)
            out.append(_Storage(cl, "ebs", vol, 500, "", node.join, node.zone))
        n_pv = max(2, len(cl.nodes) // 2 + 2)
        for _ in range(n_pv):  # dataset / checkpoint volumes
            vol = "vol-0" + _hex(rng, 16)
            size = rng.choice((1000, 1500, 2000, 3000, 4000))
            tags = ""
            if rng.random() < 0.7:
                proj = rng.choice(projects)
                tags = _tags({"project_id": proj, "team_id": project_team[proj]})
            zone = rng.choice(cl.nodes).zone
            out.append(_Storage(cl, "ebs", vol, size, tags, 0, zone))
        for j in range(max(1, len(cl.nodes) // 4)):
            proj = rng.choice(projects)
            if j % 2 == 0:
                bucket = f"acme-{proj}-{cl.name}-datasets"
                if any(o.resource_id == bucket for o in out):
                    bucket = f"{bucket}-{j}"
                tags = _tags({"project_id": proj, "team_id": project_team[proj]})
            else:
                bucket = f"acme-{cl.name}-scratch-{j}"
                tags = ""
            out.append(_Storage(cl, "s3", bucket, rng.randrange(2000, 60000), tags, 0, ""))
    return out


# --------------------------------------------------------------------------------------------
# Persistent volumes: claims, the pods holding them, and their disks on the bill (issue 4)
# --------------------------------------------------------------------------------------------

VOLUME_METRICS: tuple[str, ...] = (
    "kube_persistentvolume_info",
    "kube_persistentvolume_claim_ref",
    "kube_persistentvolumeclaim_info",
    "kube_pod_spec_volumes_persistentvolumeclaims_info",
)


@dataclass(slots=True)
class _VolumeClaim:
    cluster: Cluster
    namespace: str
    claim: str
    volume: str  # the PersistentVolume's name (pvc-<uuid>, as dynamic provisioning names it)
    volume_id: str  # the EBS volume id the bill names
    size_gb: int
    zone: str
    holders: frozenset[str]  # uids of the pods whose spec names the claim


def _build_volume_claims(
    rng: random.Random, fleet: list[Cluster], pods: list[Pod]
) -> list[_VolumeClaim]:
    """Per cluster: a checkpoint claim held by one project's training / fine-tuning pods in their
    namespace, a notebook home claim held by every incarnation of one user's notebook, and a scratch
    claim no pod holds. Untagged disks: their bill lines follow the pods (or stay unallocated)."""
    out: list[_VolumeClaim] = []
    for cl in fleet:
        mine = [p for p in pods if p.cluster == cl.idx]
        jobs: dict[tuple[str, str], list[Pod]] = {}
        for p in mine:
            if p.kind in ("training", "finetune"):
                jobs.setdefault((p.namespace, p.project), []).append(p)
        notebooks: dict[tuple[str, str], list[Pod]] = {}
        for p in mine:
            if p.kind == "notebook":
                notebooks.setdefault((p.namespace, p.created_by_name), []).append(p)
        wanted: list[tuple[str, str, int, list[Pod]]] = []
        if jobs:
            (ns, project), held = max(jobs.items(), key=lambda kv: (len(kv[1]), kv[0]))
            wanted.append((ns, f"ckpt-{project}", 2000, held))
        if notebooks:
            (ns, sts), held = max(notebooks.items(), key=lambda kv: (len(kv[1]), kv[0]))
            wanted.append((ns, f"home-{sts}-0", 100, held))
        scratch_ns = wanted[0][0] if wanted else "default"
        wanted.append((scratch_ns, f"scratch-{cl.name}", 500, []))
        for ns, claim, size, held in wanted:
            out.append(
                _VolumeClaim(
                    cluster=cl,
                    namespace=ns,
                    claim=claim,
                    volume="pvc-" + _uuid(rng),
                    volume_id="vol-0" + _hex(rng, 16),
                    size_gb=size,
                    zone=rng.choice(cl.nodes).zone,
                    holders=frozenset(p.uid for p in held),
                )
            )
    return out


def _claim_storage(claims: list[_VolumeClaim]) -> list[_Storage]:
    """The claims' disks as untagged EBS bill lines, named by the volume id the PV carries."""
    return [_Storage(c.cluster, "ebs", c.volume_id, c.size_gb, "", 0, c.zone) for c in claims]


def _volume_kube_day(
    cluster: Cluster,
    claims: list[_VolumeClaim],
    day_pods: list[Pod],
    day_start: int,
    step: int,
    window_end: int,
) -> dict[str, list]:
    """One day of the PV / PVC / pod-volume series of one cluster. The cluster's first (even)
    index names disks by the EBS CSI volume handle, the other by the in-tree ebs_volume_id."""
    n_steps = SECONDS_PER_DAY // step
    ts = list(range(day_start, day_start + SECONDS_PER_DAY, step))
    out: dict[str, list] = {m: [] for m in VOLUME_METRICS}

    def pairs(ks: int, ke: int) -> list[str]:
        return [",".join([f'[{t},"1"]' for t in ts[ks:ke]])]

    cname = cluster.name
    mine = [c for c in claims if c.cluster is cluster]
    for c in mine:
        disk = (
            {"csi_driver": "ebs.csi.aws.com", "csi_volume_handle": c.volume_id}
            if cluster.idx % 2 == 0
            else {"ebs_volume_id": f"aws://{c.zone}/{c.volume_id}"}
        )
        pv = {"cluster": cname, "persistentvolume": c.volume, "storageclass": "gp3", **disk}
        ref = {"cluster": cname, "persistentvolume": c.volume}
        ref |= {"claim_namespace": c.namespace, "name": c.claim}
        pvc = {"cluster": cname, "namespace": c.namespace, "persistentvolumeclaim": c.claim}
        pvc |= {"storageclass": "gp3", "volumename": c.volume}
        for name, labels in (
            ("kube_persistentvolume_info", pv),
            ("kube_persistentvolume_claim_ref", ref),
            ("kube_persistentvolumeclaim_info", pvc),
        ):
            out[name].append((_sorted_labels({"__name__": name, **labels}), pairs(0, n_steps)))
    holders = {uid: c for c in mine for uid in c.holders}
    metric = "kube_pod_spec_volumes_persistentvolumeclaims_info"
    for p in day_pods:
        c = holders.get(p.uid)
        if c is None:
            continue
        ks = max(0, (p.start - day_start) // step)
        ke = min(n_steps, (min(p.end, window_end) - day_start) // step)
        if ke > ks:
            labels = {"__name__": metric, "cluster": cname, "namespace": p.namespace, "pod": p.name}
            labels |= {"uid": p.uid, "volume": "data", "persistentvolumeclaim": c.claim}
            out[metric].append((_sorted_labels(labels), pairs(ks, ke)))
    return out


def _bill_day_tagged_egress(
    focus: _FocusWriter, fleet: list[Cluster], day_start: int, project_team: dict[str, str]
) -> None:
    """One day's data transfer out of the first cluster's tagged NAT gateway: direct to its project
    (the untagged egress lines of _bill_day stay shared by policy)."""
    cl = fleet[0]
    rng = random.Random(f"{cl.name}/egress/{day_start}")
    project = sorted(project_team)[0]
    gb = Decimal(rng.randrange(5_000, 60_000)) / 1000
    cost = _money(gb * EGRESS_PER_GB)
    sku = _sku(f"NatGateway-Bytes/{cl.region}")
    focus.row(
        BilledCost=cost,
        ChargeCategory="Usage",
        ChargeDescription="$0.090 per GB - data transfer out to the internet via NAT gateway",
        ChargeFrequency="Usage-Based",
        ChargePeriodStart=_iso(day_start),
        ChargePeriodEnd=_iso(day_start + SECONDS_PER_DAY),
        ConsumedQuantity=format(gb, "f"),
        ConsumedUnit="GB",
        ContractedCost=cost,
        ContractedUnitPrice=_money(EGRESS_PER_GB),
        EffectiveCost=cost,
        ListCost=cost,
        ListUnitPrice=_money(EGRESS_PER_GB),
        PricingCategory="Standard",
        PricingQuantity=format(gb, "f"),
        PricingUnit="GB",
        RegionId=cl.region,
        RegionName=cl.region_name,
        ResourceId=f"nat-0{hashlib.sha256(cl.name.encode()).hexdigest()[:16]}",
        ResourceType="nat-gateway",
        ServiceCategory="Networking",
        ServiceName="AWS Data Transfer",
        SkuId=sku,
        SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
        SubAccountId=cl.sub_account_id,
        SubAccountName=cl.sub_account_name,
        Tags=_tags({"project_id": project, "team_id": project_team[project]}),
    )


def _write_truth(path: Path, fleet: list[Cluster], pods: list[Pod]) -> None:
    """Every pod's true project (what attribution should find), for benchmarks and tests."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["cluster", "namespace", "pod", "uid", "project_id", "kind", "tag_state"])
        for p in sorted(pods, key=lambda p: (p.cluster, p.seq)):
            writer.writerow(
                [fleet[p.cluster].name, p.namespace, p.name, p.uid, p.project, p.kind, p.tag_state]
            )


CREATOR_ANNOTATION = "gpucost.io/created-by"
CREATOR_DOMAIN = "acme.example"
# who creates the owners of the pods that no person submits (their pods name no person)
CREATOR_SERVICE_ACCOUNTS = {
    "notebook": "system:serviceaccount:kubeflow:jupyter-web-app-service-account",
    "inference": "system:serviceaccount:argocd:argocd-application-controller",
}


def _stamp_creators(fleet: list[Cluster], pods: list[Pod], share: float) -> int:
    """Hard mode: the first ``round(share * clusters)`` clusters run a mutating admission webhook
    that stamps ``gpucost.io/created-by`` on each workload it admits, from the AdmissionReview
    request's ``userInfo.username`` (the kube-apiserver audit log has the same name on the
    workload's ``create`` Event). The webhook mutates the owner (Job, PyTorchJob, Deployment,
    Notebook) and its pod template, so a controller's pods carry the user who created the owner,
    not the controller's service account. That user is the OIDC name (``alice@acme.example``) of
    the person who submitted a training, fine-tune, evaluation or ETL job, or a service account
    that names no person: a CI pipeline's, the notebook web app's (it creates the Notebook object
    for the user), the GitOps controller's (serving Deployments). Clusters without the webhook
    stamp nothing. Returns the number of pods stamped."""
    stamped = 0
    with_webhook = {cl.idx for cl in fleet[: round(share * len(fleet))]}
    for p in pods:
        if p.cluster not in with_webhook:
            continue
        who = CREATOR_SERVICE_ACCOUNTS.get(p.kind, p.user)
        if not who.startswith("system:"):
            who = f"{who}@{CREATOR_DOMAIN}"
        p.creator = who
        stamped += 1
    return stamped


def _write_pod_specs(
    out_dir: Path, fleet: list[Cluster], pods: list[Pod], t0: int, days: int, window_end: int
) -> int:
    """Hard mode: a daily `kubectl get pods --all-namespaces -o json` snapshot per cluster (a v1
    List of Pods) under inventory/kube/<cluster>/pods-<date>.json. Container command, args and
    workingDir and the mounted volumes live only in the pod spec (kube-state-metrics does not export
    them). Returns the number of files written."""
    files = 0
    for cl in fleet:
        for d in range(days):
            day_start = t0 + d * SECONDS_PER_DAY
            day_end = min(day_start + SECONDS_PER_DAY, window_end)
            alive = [
                p for p in pods if p.cluster == cl.idx and p.start < day_end and p.end > day_start
            ]
            items = [_pod_object(p) for p in sorted(alive, key=lambda p: (p.start, p.seq))]
            date = datetime.fromtimestamp(day_start, UTC).strftime("%Y-%m-%d")
            path = out_dir / "inventory" / "kube" / cl.name / f"pods-{date}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {}}
            path.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
            files += 1
    return files


def _pod_object(p: Pod) -> dict[str, Any]:
    """One Pod as the Kubernetes API returns it (the fields a snapshot keeps)."""
    containers = []
    for c in p.containers:
        spec: dict[str, Any] = {"image": c.image, "name": c.name}
        if c.command:
            spec["command"] = c.command
        if c.args:
            spec["args"] = c.args
        if c.working_dir:
            spec["workingDir"] = c.working_dir
        requests: dict[str, str] = {"cpu": c.cpu, "memory": c.memory}
        if c.gpus:
            requests["nvidia.com/gpu"] = str(c.gpus)
        spec["resources"] = {"requests": requests}
        containers.append(spec)
    volumes = [
        {"name": f"vol-{i}", "persistentVolumeClaim": {"claimName": claim}}
        for i, claim in enumerate(p.volume_claims)
    ]
    labels = {k.removeprefix("label_"): v for k, v in p.labels.items()}
    labels["app"] = p.app
    metadata: dict[str, Any] = {"annotations": {CREATOR_ANNOTATION: p.creator}} if p.creator else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **metadata,
            "creationTimestamp": _iso(p.start),
            "labels": dict(sorted(labels.items())),
            "name": p.name,
            "namespace": p.namespace,
            "ownerReferences": [
                {"controller": True, "kind": p.created_by_kind, "name": p.created_by_name}
            ],
            "uid": p.uid,
        },
        "spec": {
            "containers": containers,
            "nodeName": p.node.name if p.node else None,
            "volumes": volumes,
        },
        "status": {"podIP": p.pod_ip, "startTime": _iso(p.start)},
    }


def _write_org(out_dir: Path) -> Path:
    path = out_dir / "reference" / "org_mapping.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("project_id", "project_name", "team_id", "team_name", "cost_center"))
        for team_id, team_name, cc, projects in TEAMS:
            for pid, pname, _ in projects:
                w.writerow((pid, pname, team_id, team_name, cc))
    return path


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def generate_month(
    out_dir: Path,
    *,
    seed: int = 42,
    nodes: int = 16,
    days: int = 30,
    step_seconds: int = 300,
    start: str = "2026-10-01",
    clusters: int = 2,
    untagged_fraction: float = 0.5,
    progress: Callable[[str], None] | None = None,
    hard: bool = False,
    truth_csv: Path | None = None,
    slurm_nodes: int = 2,
    shared_gpus: bool = True,
    cpu_only_pods: bool = True,
    creator_webhook_share: float = 0.5,
    openmetrics: Path | None = None,
) -> dict:
    """Generate ``days`` days of raw billing, DCGM and kube-state-metrics files into ``out_dir``.

    Returns a summary dict (``billed_total`` / ``effective_total`` are exact ``Decimal`` sums of
    the strings written; ``samples`` counts every ``[ts, value]`` pair in the DCGM files, i.e.
    4 per GPU per step; ``gpu_samples`` counts GPU-steps).

    ``hard`` makes attribution harder (the attribution benchmark): users with a fixed mix of two or
    three projects, CI service accounts without a user, images shared across projects and names that
    do not say the project, train -> eval pipelines, a project handed to another team mid-window.
    ``truth_csv`` (outside the landing zone) receives every pod's true project: cluster, namespace,
    pod, uid, project_id, kind, tag_state.
    ``slurm_nodes`` GPU nodes (0: none) form a Slurm queue next to the Kubernetes clusters, with its
    sacct dumps and DCGM series (see gpucost.synth.generator_slurm).
    ``shared_gpus`` adds an H100 inference node to the first cluster whose GPUs are split into MIG
    instances (seven 1g.10gb; 3g.40gb + 2g.20gb + two 1g.10gb) or time-sliced between replicas (4
    and 2); ``cpu_only_pods`` adds feature-ETL jobs that request only CPU and memory on GPU nodes.
    ``openmetrics`` (outside the landing zone) receives the month's series as OpenMetrics text, the
    input of ``promtool tsdb create-blocks-from openmetrics`` (gpucost.commands.openmetrics).
    """
    if step_seconds <= 0 or 3600 % step_seconds:
        raise ValueError("step_seconds must divide 3600")
    if days < 1 or nodes < 1 or clusters < 1:
        raise ValueError("days, nodes and clusters must be >= 1")
    if clusters > nodes:
        raise ValueError("need at least one node per cluster")
    if slurm_nodes < 0:
        raise ValueError("slurm_nodes must be >= 0")
    if not 0.0 <= untagged_fraction <= 1.0:
        raise ValueError("untagged_fraction must be within [0, 1]")
    if not 0.0 <= creator_webhook_share <= 1.0:
        raise ValueError("creator_webhook_share must be within [0, 1]")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    step = step_seconds
    t0 = int(datetime.fromisoformat(start).replace(tzinfo=UTC).timestamp())
    if t0 % SECONDS_PER_DAY:
        raise ValueError("start must be a date (midnight UTC)")
    window_end = t0 + days * SECONDS_PER_DAY

    rng = random.Random(seed)
    user_team, project_team, typo = _build_org(rng)
    fleet = _build_fleet(rng, nodes, clusters, t0, window_end)
    shared_node = None
    if shared_gpus:
        shared_node = _add_shared_gpu_node(
            fleet[0], random.Random(f"{seed}/shared-node"), nodes, t0
        )
    account_id = str(rng.randrange(10**11, 10**12))

    # Workloads and scheduling (small: a few records per pod for the whole window).
    all_pods: list[Pod] = []
    arrivals_total = 0
    for cl in fleet:
        wrng = random.Random(f"{seed}/workload/{cl.name}")
        factory = _PodFactory(
            wrng,
            cl,
            user_team,
            project_team,
            step,
            hard=hard,
            handoff_at=(t0 + window_end) // 2,
            spec_seed=f"{seed}/specs/{cl.name}",
        )
        arrivals = _cluster_arrivals(factory, cl, t0, window_end, step)
        arrivals_total += len(arrivals)
        all_pods.extend(_schedule(cl, arrivals, t0, window_end, step, wrng.randrange(0, 5000)))
        extra = _PodFactory(
            random.Random(f"{seed}/extra-workloads/{cl.name}"), cl, user_team, project_team, step
        )
        extra.seq = 1_000_000  # after the scheduled pods' sequence numbers
        if shared_node is not None and shared_node.cluster == cl.idx:
            all_pods.extend(_shared_gpu_pods(extra, shared_node, t0, window_end))
        if cpu_only_pods:
            all_pods.extend(_cpu_only_pods(extra, cl, t0, window_end, step))
    hpc: generator_slurm.SlurmCluster | None = None
    if slurm_nodes:
        srng = random.Random(f"{seed}/slurm")
        hpc = generator_slurm.build_cluster(srng, P4D, slurm_nodes, t0, GPUS_PER_NODE, _hex)
        team_projects: dict[str, list[str]] = {}
        for project, team in project_team.items():
            team_projects.setdefault(team, []).append(project)
        generator_slurm.schedule_jobs(srng, hpc, user_team, team_projects, t0, window_end, step)
    untagged, n_typo = _assign_tags(
        all_pods, random.Random(f"{seed}/tags"), untagged_fraction, typo
    )

    if truth_csv is not None:
        _write_truth(Path(truth_csv), fleet, all_pods)
    stamped = _stamp_creators(fleet, all_pods, creator_webhook_share) if hard else 0
    spec_files = _write_pod_specs(out_dir, fleet, all_pods, t0, days, window_end) if hard else 0

    # Telemetry gap: one node's exporter is down for an hour.
    gap_rng = random.Random(f"{seed}/gap")
    candidates = [n for cl in fleet for n in cl.nodes if n.join == t0 and not n.reserved]
    gap_node = gap_rng.choice(candidates)
    gap_day = gap_rng.randrange(1, days - 1) if days > 2 else 0
    gap_start = t0 + gap_day * SECONDS_PER_DAY + gap_rng.randrange(8, 20) * 3600
    gap = Gap(gap_node.idx, gap_start, gap_start + 3600)

    # Index pods by (cluster, day) for the day-by-day emission.
    by_day: dict[tuple[int, int], list[Pod]] = {}
    for p in sorted(all_pods, key=lambda p: (p.cluster, p.start, p.seq)):
        last = min(p.end, window_end) - step
        d_last = (last - t0) // SECONDS_PER_DAY
        if p.end < window_end:
            d_last = max(d_last, (p.end - t0) // SECONDS_PER_DAY)
        for d in range((p.start - t0) // SECONDS_PER_DAY, d_last + 1):
            by_day.setdefault((p.cluster, d), []).append(p)

    storage = _build_storage(random.Random(f"{seed}/storage"), fleet, project_team)
    claims = _build_volume_claims(random.Random(f"{seed}/volumes"), fleet, all_pods)
    storage.extend(_claim_storage(claims))
    bill_rng = random.Random(f"{seed}/bill")
    focus = _FocusWriter(out_dir, account_id, "Acme ML Payer")
    files = 1
    _write_org(out_dir)
    samples_total = 0
    allocated_gpu_s = 0
    existing_gpu_s = 0
    sku_cache = {it.name: _sku(f"{it.name}/BoxUsage") for it in INSTANCE_TYPES}
    try:
        for d in range(days):
            day_start = t0 + d * SECONDS_PER_DAY
            date = datetime.fromtimestamp(day_start, UTC).strftime("%Y-%m-%d")
            day_samples = 0
            day_pods = 0
            for cl in fleet:
                pods_today = by_day.pop((cl.idx, d), [])
                day_pods += sum(1 for p in pods_today if min(p.end, window_end) > day_start)
                drng = random.Random(f"{seed}/dcgm/{cl.name}/{date}")
                dcgm, n = _dcgm_day(cl, pods_today, day_start, step, window_end, gap, drng)
                day_samples += n
                ddir = out_dir / "metrics" / "dcgm" / cl.name / date
                ddir.mkdir(parents=True, exist_ok=True)
                for metric, series in dcgm.items():
                    _write_matrix(ddir / f"{metric}.json", series)
                    files += 1
                del dcgm
                kube = _kube_day(cl, pods_today, day_start, step, window_end)
                kdir = out_dir / "metrics" / "kube" / cl.name / date
                kdir.mkdir(parents=True, exist_ok=True)
                for metric, series in kube.items():
                    _write_matrix(kdir / f"{metric}.json", series)
                    files += 1
                volumes = _volume_kube_day(cl, claims, pods_today, day_start, step, window_end)
                for metric, series in volumes.items():
                    _write_matrix(kdir / f"{metric}.json", series)
                    files += 1
                for p in pods_today:
                    if p.node is None or p.node.reserved:
                        continue  # the share of scheduled whole GPUs (the shared node is apart)
                    lo = max(p.start, day_start)
                    hi = min(p.end, window_end, day_start + SECONDS_PER_DAY)
                    if hi > lo:
                        allocated_gpu_s += p.gpus * (hi - lo)
                for node in cl.nodes:
                    if node.reserved:
                        continue
                    lo = max(node.join, day_start)
                    if lo < day_start + SECONDS_PER_DAY:
                        existing_gpu_s += GPUS_PER_NODE * (day_start + SECONDS_PER_DAY - lo)
            if hpc is not None:
                generator_slurm.write_sacct_day(out_dir, hpc, day_start, window_end)
                hrng = random.Random(f"{seed}/dcgm/{hpc.name}/{date}")
                dcgm, n = generator_slurm.dcgm_day(hpc, day_start, step, window_end, hrng)
                day_samples += n
                ddir = out_dir / "metrics" / "dcgm" / hpc.name / date
                ddir.mkdir(parents=True, exist_ok=True)
                for metric, series in dcgm.items():
                    _write_matrix(ddir / f"{metric}.json", series)
                    files += 1
                del dcgm
            samples_total += day_samples
            _bill_day(focus, fleet, storage, day_start, bill_rng, sku_cache, hpc)
            _bill_day_tagged_egress(focus, fleet, day_start, project_team)
            if progress is not None:
                progress(f"day {d + 1}/{days} ({date}): {day_pods} pods, {day_samples} samples")
        focus.close_month()
    finally:
        if focus.fh is not None:
            focus.fh.close()
    files += focus.files + spec_files
    if openmetrics is not None:
        from gpucost.commands.openmetrics import write_openmetrics_file

        write_openmetrics_file(out_dir, Path(openmetrics))

    return {
        "out_dir": str(out_dir),
        "seed": seed,
        "start": _iso(t0),
        "end": _iso(window_end),
        "days": days,
        "step_seconds": step,
        "files": files,
        "bill_lines": focus.lines,
        "billed_total": focus.billed_total,
        "effective_total": focus.effective_total,
        "billing_account_id": account_id,
        "months": focus.months,
        "pods": len(all_pods),
        "untagged_pods": untagged,
        "typo_pods": n_typo,
        "creator_stamped_pods": stamped,
        "pods_never_scheduled": arrivals_total - len(all_pods),
        "samples": samples_total,
        "gpu_samples": samples_total // len(DCGM_METRICS),
        "gpu_allocation": round(allocated_gpu_s / existing_gpu_s, 4) if existing_gpu_s else 0.0,
        "telemetry_gap": {
            "cluster": fleet[gap_node.cluster].name,
            "node": gap_node.name,
            "start": _iso(gap.start),
            "end": _iso(gap.end),
        },
        "late_node": next(
            (
                {"node": n.name, "joined": _iso(n.join)}
                for c in fleet
                for n in c.nodes
                if n.join > t0
            ),
            None,
        ),
        "slurm": None
        if hpc is None
        else {
            "cluster": hpc.name,
            "nodes": [n.name for n in hpc.nodes],
            "jobs": len(hpc.jobs),
            "array_tasks": sum(1 for j in hpc.jobs if "_" in j.job_id),
        },
        "volume_claims": [
            {
                "cluster": c.cluster.name,
                "namespace": c.namespace,
                "claim": c.claim,
                "volume": c.volume,
                "volume_id": c.volume_id,
                "holders": sorted(c.holders),
            }
            for c in claims
        ],
        "clusters": [
            {
                "name": cl.name,
                "region": cl.region,
                "sub_account_id": cl.sub_account_id,
                "hostname_label": cl.hostname_label,
                "nodes": [n.name for n in cl.nodes],
            }
            for cl in fleet
        ],
    }


def _bill_day(
    focus: _FocusWriter,
    fleet: list[Cluster],
    storage: list[_Storage],
    day_start: int,
    rng: random.Random,
    sku_cache: dict[str, str],
    hpc: generator_slurm.SlurmCluster | None = None,
) -> None:
    focus.open_month(day_start)
    dt = datetime.fromtimestamp(day_start, UTC)
    next_month = datetime(dt.year + (dt.month == 12), dt.month % 12 + 1, 1, tzinfo=UTC)
    days_in_month = (next_month - datetime(dt.year, dt.month, 1, tzinfo=UTC)).days
    day_iso, next_iso = _iso(day_start), _iso(day_start + SECONDS_PER_DAY)
    keep = 1 - DISCOUNT
    for h in range(24):
        hs = day_start + h * 3600
        hs_iso, he_iso = _iso(hs), _iso(hs + 3600)
        for cl in [*fleet, *([hpc] if hpc is not None else [])]:
            tags = _tags({"cluster": cl.name})
            for node in cl.nodes:
                if node.join > hs:
                    continue
                it = node.itype
                price = _money(it.hourly_price)
                eff = _money(it.hourly_price * keep)
                sku = sku_cache[it.name]
                focus.row(
                    AvailabilityZone=node.zone,
                    BilledCost=price,
                    ChargeCategory="Usage",
                    ChargeDescription=f"${it.hourly_price} per On Demand Linux {it.name} "
                    "Instance Hour",
                    ChargeFrequency="Usage-Based",
                    ChargePeriodStart=hs_iso,
                    ChargePeriodEnd=he_iso,
                    ConsumedQuantity="1",
                    ConsumedUnit="Hours",
                    ContractedCost=eff,
                    ContractedUnitPrice=eff,
                    EffectiveCost=eff,
                    ListCost=price,
                    ListUnitPrice=price,
                    PricingCategory="Standard",
                    PricingQuantity="1",
                    PricingUnit="Hours",
                    RegionId=cl.region,
                    RegionName=cl.region_name,
                    ResourceId=node.instance_id,
                    ResourceName=node.name,
                    ResourceType="instance",
                    ServiceCategory="Compute",
                    ServiceName="Amazon Elastic Compute Cloud",
                    SkuId=sku,
                    SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                    SubAccountId=cl.sub_account_id,
                    SubAccountName=cl.sub_account_name,
                    Tags=tags,
                )
    for s in storage:
        if s.start >= day_start + SECONDS_PER_DAY:
            continue
        cl = s.cluster
        if s.kind == "ebs":
            unit_price, service, rtype = EBS_GP3_GB_MONTH, "Amazon Elastic Block Store", "volume"
            desc = f"$0.08 per GB-month of General Purpose (gp3) provisioned storage - {cl.region}"
            size = Decimal(s.size_gb)
        else:
            unit_price, service, rtype = (
                S3_STANDARD_GB_MONTH,
                "Amazon Simple Storage Service",
                "bucket",
            )
            desc = "$0.023 per GB - first 50 TB / month of storage used"
            size = Decimal(s.size_gb) * (1 + Decimal(rng.randrange(-200, 400)) / 100000)
        qty = (size / days_in_month).quantize(TEN_DP, rounding=ROUND_HALF_EVEN)
        cost = _money(qty * unit_price)
        sku = _sku(f"{service}/{cl.region}")
        focus.row(
            AvailabilityZone=s.zone,
            BilledCost=cost,
            ChargeCategory="Usage",
            ChargeDescription=desc,
            ChargeFrequency="Usage-Based",
            ChargePeriodStart=day_iso,
            ChargePeriodEnd=next_iso,
            ConsumedQuantity=format(qty, "f"),
            ConsumedUnit="GB-Mo",
            ContractedCost=cost,
            ContractedUnitPrice=_money(unit_price),
            EffectiveCost=cost,
            ListCost=cost,
            ListUnitPrice=_money(unit_price),
            PricingCategory="Standard",
            PricingQuantity=format(qty, "f"),
            PricingUnit="GB-Mo",
            RegionId=cl.region,
            RegionName=cl.region_name,
            ResourceId=s.resource_id,
            ResourceName=s.resource_id,
            ResourceType=rtype,
            ServiceCategory="Storage",
            ServiceName=service,
            SkuId=sku,
            SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
            SubAccountId=cl.sub_account_id,
            SubAccountName=cl.sub_account_name,
            Tags=s.tags,
        )
    for cl in fleet:
        gb = Decimal(rng.randrange(40_000, 900_000)) / 1000
        cost = _money(gb * EGRESS_PER_GB)
        sku = _sku(f"DataTransfer-Out-Bytes/{cl.region}")
        focus.row(
            BilledCost=cost,
            ChargeCategory="Usage",
            ChargeDescription="$0.090 per GB - first 10 TB / month data transfer out beyond the "
            "global free tier",
            ChargeFrequency="Usage-Based",
            ChargePeriodStart=day_iso,
            ChargePeriodEnd=next_iso,
            ConsumedQuantity=format(gb, "f"),
            ConsumedUnit="GB",
            ContractedCost=cost,
            ContractedUnitPrice=_money(EGRESS_PER_GB),
            EffectiveCost=cost,
            ListCost=cost,
            ListUnitPrice=_money(EGRESS_PER_GB),
            PricingCategory="Standard",
            PricingQuantity=format(gb, "f"),
            PricingUnit="GB",
            RegionId=cl.region,
            RegionName=cl.region_name,
            ServiceCategory="Networking",
            ServiceName="AWS Data Transfer",
            SkuId=sku,
            SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
            SubAccountId=cl.sub_account_id,
            SubAccountName=cl.sub_account_name,
        )
