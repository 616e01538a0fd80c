"""Allocation bases per node pool and task-complexity weights, with the money worked out on paper.

One node-hour (10:00-11:00 UTC), node ``n2`` with two GPUs observed all hour, its line 10.00:

* ``llm-train-worker-0`` (a PyTorchJob: class training, weight 1.5) holds GPU 0 all hour, 80 % busy;
* ``hpo-sweep-7-x1`` (a Job named like a sweep: class hyperparameter_tuning, weight 0.8) holds GPU 1 for
  45 minutes, 40 % busy; GPU 1's last 15 minutes are unassigned.

Idle policy `visible` keeps the idle row apart so each basis reads directly:

================================  ==========  ==========  ======
basis (pool)                      train       sweep       idle
================================  ==========  ==========  ======
requested (no pool: the default)  3.6/7.2     2.7/7.2     = 5.00 / 3.75 / 1.25
used (pool ``used``)              2.88/7.2    1.08/7.2    = 4.00 / 1.50 / 4.50
requested*complexity              8.75 x 1.5/2.1  8.75 x 0.6/2.1 = 6.25 / 2.50 / 1.25
================================  ==========  ==========  ======

(the complexity row: the workloads' part, 1.75 of 2 GPU-hours = 8.75 of 10.00, shared by 1 x 1.5 = 1.5
and 0.75 x 0.8 = 0.6 weighted GPU-hours; the idle part keeps its 1.25.)

The node-hour is landed three times, once per row of the table, each in its own cluster: ``bases`` (no
pool), ``bases-used`` and ``bases-cx`` (a landed pool each), billing account ``acct-bases``, beside the
other hand-built suites' cases (tests/python/hand_cases.py), built once under idle policy `visible`.
"""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

import pytest

from tests.python.hand_cases import (
    A100,
    MINUTES,
    Warehouse,
    node_hour_line,
    series,
    write_focus,
    write_prom,
)
from tests.python.reference.allocation import prorate_node_lines, spread_idle

D = Decimal
POOLS_HEADER = [
    "pool_id", "priority", "cluster_pattern", "node_pattern", "gpu_model_pattern",
    "gpu_allocation_basis", "complexity_weighting", "description",
]  # fmt: skip
# cluster -> its node's landed pool (basis, complexity weighting), if any
CLUSTERS = {"bases": None, "bases-used": ("used", False), "bases-cx": ("requested", True)}


def test_pool_basis_and_complexity_in_the_core():
    line = {"charge_id": "l", "billed_cost": D("10.00"), "effective_cost": D("10.00")}
    line["capacity_gpu_ms"] = 7_200_000
    usages = [
        {"charge_id": "l", "workload_id": "train", "requested_gpu_ms": 3_600_000,
         "used_gpu_ms": 2_880_000, "complexity_weight": D("1.5")},
        {"charge_id": "l", "workload_id": "sweep", "requested_gpu_ms": 2_700_000,
         "used_gpu_ms": 1_080_000, "complexity_weight": D("0.8")},
    ]  # fmt: skip

    def money(extra: dict) -> dict:
        rows = prorate_node_lines([line | extra], usages)
        assert sum(r["billed_cost"] for r in rows) == D("10.00")
        assert sum(r["allocation_ratio"] for r in rows) == 1
        return {r["workload_id"]: (r["billed_cost"], r["allocation_basis"]) for r in rows}

    assert money({}) == {
        "train": (D("5.00"), "requested"), "sweep": (D("3.75"), "requested"),
        None: (D("1.25"), "requested"),
    }  # fmt: skip
    assert money({"gpu_allocation_basis": "used"}) == {
        "train": (D("4.00"), "used"), "sweep": (D("1.50"), "used"), None: (D("4.50"), "used"),
    }  # fmt: skip
    weighted = money({"complexity_weighting": True})
    assert weighted == {
        "train": (D("6.25"), "requested*complexity"),
        "sweep": (D("2.50"), "requested*complexity"),
        None: (D("1.25"), "requested*complexity"),
    }
    with pytest.raises(ValueError, match="unknown allocation basis 'p95'"):
        prorate_node_lines([line | {"gpu_allocation_basis": "p95"}], usages)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("proportional", {"train": D("0.714285714285714286"), "sweep": D("0.535714285714285714")}),
        ("even", {"train": D("0.625"), "sweep": D("0.625")}),
        ("platform", {None: D("1.25")}),
        ("visible", {None: D("1.25")}),
    ],
)
def test_idle_policies_on_the_worked_example(policy, expected):
    """docs/allocation.md's idle table: the 1.25 of idle under each policy."""
    idle = {"charge_id": "l", "scope_keys": ["l"], "billed_cost": D("1.25"),
            "effective_cost": D("1.25"), "allocation_ratio": D("0.125")}  # fmt: skip
    weights = [
        {"scope_key": "l", "workload_id": "train", "owner_key": "t|llm", "weight": 3_600_000},
        {"scope_key": "l", "workload_id": "sweep", "owner_key": "t|tune", "weight": 2_700_000},
    ]
    rows = spread_idle([idle], weights, policy)
    assert {r["workload_id"]: r["billed_cost"] for r in rows} == expected
    assert sum(r["allocation_ratio"] for r in rows) == D("0.125")


def write_case(landing: Path) -> None:
    """This suite's case in ``landing``: the node-hour once per cluster of ``CLUSTERS``, and the pools
    (tests/python/hand_cases.py lands it beside the other suites')."""
    for cluster in CLUSTERS:
        write_node_hour(landing, cluster)
    pools = landing / "reference" / "allocation_pools" / "bases.csv"
    pools.parent.mkdir(parents=True, exist_ok=True)
    with pools.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(POOLS_HEADER)
        for cluster, pool in CLUSTERS.items():
            if pool is not None:
                basis, weighting = pool
                writer.writerow([f"a100-{basis}", "10", f"^{cluster}$", "", "A100", basis,
                                 str(weighting).lower(), "test pool"])  # fmt: skip
        writer.writerow(["never", "20", "^nope$", "", "", "max", "false", "matches no node"])
    write_focus(
        landing / "billing" / "focus" / "2026-10" / "allocation_bases.csv",
        [node_hour_line("acct-bases", f"i-{cluster}", "10.00") for cluster in CLUSTERS],
    )


def write_node_hour(landing: Path, cluster: str) -> None:
    node = "n2"
    train = {"namespace": "ml", "pod": "llm-train-worker-0", "uid": f"uid-train-{cluster}"}
    sweep = {"namespace": "ml", "pod": "hpo-sweep-7-x1", "uid": f"uid-sweep-{cluster}"}
    first45 = MINUTES[:45]
    kube = {
        "kube_node_info": [
            series({"__name__": "kube_node_info", "node": node,
                    "provider_id": f"aws:///us-east-1a/i-{cluster}"}, MINUTES, "1")
        ],
        "kube_pod_info": [
            series({"__name__": "kube_pod_info", **train, "node": node, "created_by_kind": "PyTorchJob",
                    "created_by_name": "llm-train"}, MINUTES, "1"),
            series({"__name__": "kube_pod_info", **sweep, "node": node, "created_by_kind": "Job",
                    "created_by_name": "hpo-sweep-7"}, first45, "1"),
        ],
        "kube_pod_labels": [
            series({"__name__": "kube_pod_labels", **train, "label_project_id": "llm"}, MINUTES, "1"),
            series({"__name__": "kube_pod_labels", **sweep, "label_project_id": "tune"}, first45, "1"),
        ],
        "kube_pod_container_resource_requests": [
            series({"__name__": "kube_pod_container_resource_requests", **ids, "container": "main",
                    "node": node, "resource": "nvidia_com_gpu", "unit": "integer"}, minutes, "1")
            for ids, minutes in ((train, MINUTES), (sweep, first45))
        ],
    }  # fmt: skip
    for metric, items in kube.items():
        write_prom(landing / "metrics" / "kube" / cluster / "2026-10-01" / f"{metric}.json", items)

    def gpu(index: str, **labels: str) -> dict[str, str]:
        return {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": index, "UUID": f"GPU-{cluster}-{index}",
                "Hostname": node, "modelName": A100, **labels}  # fmt: skip

    dcgm = [
        series(gpu("0", namespace="ml", pod=train["pod"]), MINUTES, "80"),
        series(gpu("1", namespace="ml", pod=sweep["pod"]), first45, "40"),
        series(gpu("1"), MINUTES[45:], "0"),
    ]
    write_prom(
        landing / "metrics" / "dcgm" / cluster / "2026-10-01" / "DCGM_FI_DEV_GPU_UTIL.json", dcgm
    )


def money(warehouse: Warehouse, cluster: str) -> dict[str, tuple[Decimal, str]]:
    rows = warehouse.sql(
        "select coalesce(split_part(workload_id, '/', 3), allocation_kind), sum(billed_cost),"
        " min(allocation_basis) from marts.fct_cost_allocation"
        f" where resource_id = 'i-{cluster}' group by 1"
    )
    assert sum(cost for _, cost, _ in rows) == D("10.00")
    return {k: (v.normalize(), basis) for k, v, basis in rows}


def pool_of(warehouse: Warehouse, cluster: str) -> str | None:
    ((pool,),) = warehouse.sql(
        f"select pool_id from intermediate.int_gpu_node_lines where cluster_id = '{cluster}'"
    )
    return pool


@pytest.mark.warehouse
def test_default_basis_is_requested_and_workload_classes_are_inferred(hand_variant_warehouse):
    warehouse = hand_variant_warehouse
    assert money(warehouse, "bases") == {
        "llm-train-worker-0": (D("5"), "requested"),
        "hpo-sweep-7-x1": (D("3.75"), "requested"),
        "idle": (D("1.25"), "idle_visible"),
    }
    assert pool_of(warehouse, "bases") is None
    classes = warehouse.sql(
        "select split_part(workload_id, '/', 3), workload_class, class_source, complexity_weight"
        " from intermediate.int_workload_classes where split_part(workload_id, '/', 1) = 'bases'"
        " order by 1"
    )
    assert classes == [
        ("hpo-sweep-7-x1", "hyperparameter_tuning", "inferred", D("0.8")),
        ("llm-train-worker-0", "training", "inferred", D("1.5")),
    ]


@pytest.mark.warehouse
def test_a_pool_on_the_used_basis(hand_variant_warehouse):
    assert money(hand_variant_warehouse, "bases-used") == {
        "llm-train-worker-0": (D("4"), "used"),
        "hpo-sweep-7-x1": (D("1.5"), "used"),
        "idle": (D("4.5"), "idle_visible"),
    }
    assert pool_of(hand_variant_warehouse, "bases-used") == "a100-used"


@pytest.mark.warehouse
def test_a_pool_weighting_heavy_training_above_tuning(hand_variant_warehouse):
    assert money(hand_variant_warehouse, "bases-cx") == {
        "llm-train-worker-0": (D("6.25"), "requested*complexity"),
        "hpo-sweep-7-x1": (D("2.5"), "requested*complexity"),
        "idle": (D("1.25"), "idle_visible"),
    }
    assert pool_of(hand_variant_warehouse, "bases-cx") == "a100-requested"
