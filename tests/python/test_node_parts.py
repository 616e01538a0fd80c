"""A GPU node's bill line in GPU, CPU and memory parts; CPU-only pods on GPU nodes pay for what they hold.

The pure core first (gpucost.core.node_parts), then one hand-built node-hour whose money is worked out on paper:

* node ``cpun``: 1 A100 80GB, 10 vCPUs, 10 GiB (kube_node_status_capacity). With the default list prices
  (seed node_resource_list_prices: A100 80GB 3.926016, vCPU 0.031611, GiB 0.004237 per hour) the weights are
  3.926016 : 0.316110 : 0.042370, so a line of exactly 4.284496 splits into 3.926016 (GPU), 0.316110 (CPU)
  and 0.042370 (memory).
* pod ``g`` holds the GPU, 6 cores and 4 GiB for the hour; pod ``c`` is CPU-only: 2 cores and 4 GiB.
* CPU: g 6/10 x 0.316110 = 0.189666, c 2/10 = 0.063222, idle 2/10 = 0.063222 spread 6:2 (proportional) =
  0.0474165 to g and 0.0158055 to c: g 0.2370825, c 0.0790275.
* memory: g 4/10 x 0.042370 = 0.016948, c 0.016948, idle 0.008474 spread 4:4: g 0.021185, c 0.021185.
* GPU: g requested the GPU all hour: 3.926016.
* g pays 4.1842835, c pays 0.1002125; together exactly 4.284496. Under var gpucost_node_cost_split:
  gpu_only, g pays all of it and c nothing.

The node-hour is cluster ``parts``, billing account ``acct-parts``, landed beside the other hand-built
suites' cases (tests/python/hand_cases.py) and built once per set of vars.
"""

from __future__ import annotations

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
from tests.python.reference.node_parts import part_totals, prorate_compute_parts, split_line_parts

D = Decimal
GIB = 1024**3
LINE = "4.284496"
CLUSTER, ACCOUNT = "parts", "acct-parts"


# ---- the pure core --------------------------------------------------------------------------


def test_split_line_parts_is_exact_and_keeps_a_line_without_weights_whole():
    lines = [
        {
            "charge_id": "a",
            "billed_cost": D("10.00"),
            "effective_cost": D("9.00"),
            "capacity_gpu_ms": 5,
        },
        {
            "charge_id": "b",
            "billed_cost": D("1.00"),
            "effective_cost": D("1.00"),
            "capacity_gpu_ms": 7,
        },
    ]
    weights = [
        {"charge_id": "a", "resource_part": "gpu", "part_weight": 6, "capacity_units": 5},
        {"charge_id": "a", "resource_part": "cpu", "part_weight": 3, "capacity_units": 100},
        {"charge_id": "a", "resource_part": "memory", "part_weight": 2, "capacity_units": 50},
    ]
    parts = {(p["charge_id"], p["resource_part"]): p for p in split_line_parts(lines, weights)}
    assert set(parts) == {("a", "gpu"), ("a", "cpu"), ("a", "memory"), ("b", "gpu")}
    assert sum(p["billed_cost"] for k, p in parts.items() if k[0] == "a") == D("10.00")
    assert sum(p["effective_cost"] for k, p in parts.items() if k[0] == "a") == D("9.00")
    assert sum(p["allocation_ratio"] for k, p in parts.items() if k[0] == "a") == 1
    # 10.00 x 3/11 is not a whole number of 1e-18 units: the largest remainder keeps the sum exact
    assert parts[("a", "cpu")]["billed_cost"].quantize(D("0.000001")) == D("2.727273")
    assert parts[("b", "gpu")]["billed_cost"] == D("1.00")
    assert parts[("b", "gpu")]["allocation_ratio"] == 1
    assert parts[("b", "gpu")]["capacity_units"] == 7


def test_cpu_part_pays_requests_and_spreads_its_own_idle():
    parts = [
        {"charge_id": "a", "resource_part": "cpu", "capacity_units": 1000, "billed_cost": D("3.00"),
         "effective_cost": D("3.00"), "allocation_ratio": D("0.3")},
        {"charge_id": "a", "resource_part": "gpu", "capacity_units": 1, "billed_cost": D("7.00"),
         "effective_cost": D("7.00"), "allocation_ratio": D("0.7")},
    ]  # fmt: skip
    usages = [
        {
            "charge_id": "a",
            "resource_part": "cpu",
            "workload_id": "gpu-pod",
            "requested_units": 600,
        },
        {
            "charge_id": "a",
            "resource_part": "cpu",
            "workload_id": "cpu-pod",
            "requested_units": 200,
        },
    ]
    rows = prorate_compute_parts(parts, usages)
    assert all(r["resource_part"] == "cpu" for r in rows)  # the GPU part is not theirs
    by = {(r["workload_id"], r["allocation_kind"]): r["billed_cost"] for r in rows}
    assert by == {
        ("cpu-pod", "usage"): D("0.60"),
        ("gpu-pod", "usage"): D("1.80"),
        ("cpu-pod", "idle"): D("0.15"),  # the 0.60 idle, 6:2
        ("gpu-pod", "idle"): D("0.45"),
    }
    assert sum(r["allocation_ratio"] for r in rows) == D("0.3")
    assert {r["allocation_basis"] for r in rows} == {"cpu:requested", "cpu:idle_proportional"}
    assert part_totals(rows) == {("a", "cpu"): (D("3.00"), D("3.00"))}


def test_cpu_part_nobody_held_stays_visible_idle_and_platform_takes_it_under_its_policy():
    parts = [
        {"charge_id": "a", "resource_part": "memory", "capacity_units": 10, "billed_cost": D("0.50"),
         "effective_cost": D("0.40"), "allocation_ratio": D("0.05")},
    ]  # fmt: skip
    (visible,) = prorate_compute_parts(parts, [])
    assert (visible["allocation_kind"], visible["recipient"], visible["billed_cost"]) == (
        "idle",
        "unowned",
        D("0.50"),
    )
    assert visible["unallocated_reason"] == "no_active_workload_in_scope"
    (platform,) = prorate_compute_parts(parts, [], policy="platform")
    assert platform["recipient"] == "platform"
    assert platform["allocation_basis"] == "memory:idle_platform"


def test_requests_above_capacity_share_the_part_without_idle():
    parts = [
        {"charge_id": "a", "resource_part": "cpu", "capacity_units": 100, "billed_cost": D("1.00"),
         "effective_cost": D("1.00"), "allocation_ratio": D("0.1")},
    ]  # fmt: skip
    usages = [
        {"charge_id": "a", "resource_part": "cpu", "workload_id": "x", "requested_units": 150},
        {"charge_id": "a", "resource_part": "cpu", "workload_id": "y", "requested_units": 50},
    ]
    by = {r["workload_id"]: r["billed_cost"] for r in prorate_compute_parts(parts, usages)}
    assert by == {"x": D("0.75"), "y": D("0.25")}


# ---- one node-hour through dbt build ----------------------------------------------------------


def write_case(landing: Path) -> None:
    """This suite's case in ``landing`` (tests/python/hand_cases.py lands it beside the others')."""
    node = "cpun"
    kube: dict[str, list[dict]] = {
        "kube_node_info": [
            series({"__name__": "kube_node_info", "node": node,
                    "provider_id": "aws:///us-east-1a/i-cpun"}, MINUTES, "1")
        ],
        "kube_node_status_capacity": [
            series({"__name__": "kube_node_status_capacity", "node": node, "resource": resource,
                    "unit": unit}, MINUTES, value)
            for resource, unit, value in (
                ("nvidia_com_gpu", "integer", "1"), ("cpu", "core", "10"), ("memory", "byte", str(10 * GIB))
            )
        ],
    }  # fmt: skip
    for pod, project, requests in (
        ("g", "pg", (("nvidia_com_gpu", "integer", "1"), ("cpu", "core", "6"), ("memory", "byte", str(4 * GIB)))),
        ("c", "pc", (("cpu", "core", "2"), ("memory", "byte", str(4 * GIB)))),
    ):  # fmt: skip
        ids = {"namespace": "ml", "pod": pod, "uid": f"uid-{pod}"}
        kube.setdefault("kube_pod_info", []).append(
            series({"__name__": "kube_pod_info", **ids, "node": node}, MINUTES, "1")
        )
        kube.setdefault("kube_pod_labels", []).append(
            series(
                {"__name__": "kube_pod_labels", **ids, "label_project_id": project}, MINUTES, "1"
            )
        )
        for resource, unit, value in requests:
            kube.setdefault("kube_pod_container_resource_requests", []).append(
                series({"__name__": "kube_pod_container_resource_requests", **ids, "container": "main",
                        "node": node, "resource": resource, "unit": unit}, MINUTES, value)
            )  # fmt: skip
    for metric, items in kube.items():
        write_prom(landing / "metrics" / "kube" / CLUSTER / "2026-10-01" / f"{metric}.json", items)
    gpu = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-cpun", "Hostname": node,
           "modelName": A100, "namespace": "ml", "pod": "g"}  # fmt: skip
    write_prom(
        landing / "metrics" / "dcgm" / CLUSTER / "2026-10-01" / "DCGM_FI_DEV_GPU_UTIL.json",
        [series(gpu, MINUTES, "60")],
    )
    write_focus(
        landing / "billing" / "focus" / "2026-10" / "node_parts.csv",
        [node_hour_line(ACCOUNT, "i-cpun", LINE)],
    )


def money_by(warehouse: Warehouse, key: str) -> dict[str, Decimal]:
    rows = warehouse.sql(
        f"select {key}, sum(billed_cost) from marts.fct_cost_allocation where resource_id = 'i-cpun'"
        " group by 1"
    )
    assert sum(cost for _, cost in rows) == D(LINE)  # the line reconciles at full precision
    return {k: v.normalize() for k, v in rows}


@pytest.mark.warehouse
def test_cpu_only_pod_on_a_gpu_node_pays_for_what_it_holds(hand_warehouse):
    warehouse = hand_warehouse
    assert money_by(warehouse, "project_id") == {"pg": D("4.1842835"), "pc": D("0.1002125")}
    assert money_by(warehouse, "cost_component") == {
        "compute_gpu": D("3.926016"),
        "compute_cpu": D("0.31611"),
        "compute_memory": D("0.04237"),
    }
    rows = warehouse.sql(
        "select project_id, allocation_basis, allocation_kind, billed_cost from marts.fct_cost_allocation"
        " where resource_id = 'i-cpun' and project_id = 'pc' order by 2"
    )
    assert [(r[1], r[2], r[3].normalize()) for r in rows] == [
        ("cpu:idle_proportional", "idle", D("0.0158055")),
        ("cpu:requested", "usage", D("0.063222")),
        ("memory:idle_proportional", "idle", D("0.004237")),
        ("memory:requested", "usage", D("0.016948")),
    ]
    assert warehouse.sql(
        "select count(*), count(case when not is_reconciled then 1 end) from marts.rpt_reconciliation"
        f" where billing_account_id = '{ACCOUNT}'"
    ) == [(1, 0)]


@pytest.mark.warehouse
def test_gpu_only_split_puts_the_whole_line_on_gpu_time(hand_variant_warehouse):
    assert money_by(hand_variant_warehouse, "project_id") == {"pg": D(LINE)}
    assert money_by(hand_variant_warehouse, "cost_component") == {"compute_gpu": D(LINE)}
