"""Static reference data of the synthetic fleet: FOCUS columns, metric names, prices, instance
types, sites, teams and projects, users, workload kinds."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

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


VOLUME_METRICS: tuple[str, ...] = (
    "kube_persistentvolume_info",
    "kube_persistentvolume_claim_ref",
    "kube_persistentvolumeclaim_info",
    "kube_pod_spec_volumes_persistentvolumeclaims_info",
)


CREATOR_ANNOTATION = "gpucost.io/created-by"


CREATOR_DOMAIN = "acme.example"


# who creates the owners of the pods that no person submits (their pods name no person)
CREATOR_SERVICE_ACCOUNTS = {
    "notebook": "system:serviceaccount:kubeflow:jupyter-web-app-service-account",
    "inference": "system:serviceaccount:argocd:argocd-application-controller",
}


# hard mode: the projects that can be born mid-month (no serving deployment runs them all month);
# at most two are, so every team keeps a project that runs from the first day
MAX_BORN_PROJECTS = 2


BORN_CANDIDATES = tuple(
    sorted(p[0] for t in TEAMS for p in t[3] if p[0] not in SERVING_PROJECTS + HANDOFF_PROJECT)
)


# hard mode: how a cluster lays out its namespaces (MonthConfig.namespace_layouts)
NAMESPACE_LAYOUTS = ("team", "project", "shared")
