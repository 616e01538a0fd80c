"""Fractional and shared GPUs priced right: MIG slices, time-sliced replicas, Slurm jobs, telemetry gaps.

One hand-built hour (10:00-11:00 UTC) whose expected money can be worked out on paper:

* ``mig7``: one A100 split into seven 1g.10gb MIG instances, one pod on each; the node-hour costs 7.00,
  so each pod pays exactly 1.00 (each instance is 1 of 7 compute slices).
* ``migmix``: 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb on an 80 GB A100 for 7.00: 3.00 / 2.00 / 1.00 / 1.00 by
  compute slices; 3.50 / 1.75 / 0.875 / 0.875 by memory (var gpucost_mig_share: memory).
* ``ts``: one GPU time-sliced between 4 pods (each its own series on the same UUID, busy 10/20/30/40 %),
  4.00: 1.00 each by request.
* ``tsu``: the same GPU again (4.00), in a landed pool on the `used` basis: under var
  gpucost_shared_gpu_split: used each replica's busy share is its own measured use, together the whole
  GPU: 0.40 / 0.80 / 1.20 / 1.60 and no idle. (Under the default `even` split each replica's used time is
  a quarter of its busy share: 0.10 / 0.20 / 0.30 / 0.40 and 3.00 of idle, which the `proportional`
  policy would spread back to the same totals; the `visible` policy of the build that checks this keeps
  that idle apart, so the split is what the test sees.)
* ``gap``: one pod whose exporter missed 20 minutes (a gap beyond gpucost_max_sample_gap_seconds); the
  missing scrape is not idle time: the pod pays the whole 3.00.
* ``hpc01`` / ``hpc02`` (cluster ``hpc``): a Slurm array task (500_3, JobIDRaw 503) holding one GPU on each
  node (hostlist hpc[01-02]); hpc01's series carries the exporter's hpc_job label, hpc02's does not
  (matched by node and time). 6.00 per node: the job pays 12.00.
* a duplicated scrape: every kube file of the k8s cluster landed twice: nothing changes.
* ``slow`` (cluster ``slow``, no bill line): a GPU scraped every 10 minutes from 09:00 to 10:00.

The cases land beside the other hand-built suites' (tests/python/hand_cases.py): billing account
``acct-gpus``, clusters ``k8s``, ``hpc`` and ``slow``; every test reads only its own resource ids.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from tests.python.hand_cases import (
    A100,
    MINUTES,
    T0,
    Warehouse,
    node_hour_line,
    series,
    write_focus,
    write_prom,
)

pytestmark = pytest.mark.warehouse

D = Decimal
ACCOUNT = "acct-gpus"

# node -> (instance id, GPU uuid, [(MIG instance id, profile, pod, project)])
MIG_NODES = {
    "mig7": ("i-mig7", "GPU-mig7", [(str(i), "1g.10gb", f"mig7-p{i}", f"p{i}") for i in range(1, 8)]),
    "migmix": (
        "i-migmix",
        "GPU-migmix",
        [("1", "3g.40gb", "mix-a", "pa"), ("2", "2g.20gb", "mix-b", "pb"),
         ("3", "1g.10gb", "mix-c", "pc"), ("4", "1g.10gb", "mix-d", "pd")],
    ),
}  # fmt: skip
# time-sliced node -> its 4 replicas (pod, project, busy %)
TS_NODES = {
    node: [(f"{node}-{i}", f"{letter}{i}", 10 * i) for i in range(1, 5)]
    for node, letter in (("ts", "t"), ("tsu", "u"))
}
TS_PODS = TS_NODES["ts"]
BILL = {
    "i-mig7": "7.00",
    "i-migmix": "7.00",
    "i-ts": "4.00",
    "i-tsu": "4.00",
    "i-gap": "3.00",
    "hpc01": "6.00",
    "hpc02": "6.00",
}
POOLS = (
    "pool_id,priority,cluster_pattern,node_pattern,gpu_model_pattern,gpu_allocation_basis,"
    "complexity_weighting,description\n"
    "tsu-used,30,^k8s$,^tsu$,,used,false,the time-sliced node whose replicas pay their measured use\n"
)
SACCT = [
    "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|ElapsedRaw|AllocTRES|NodeList|State",
    "500_3|503|sweep|bob|vision|gpu|2026-10-01T09:59:00|2026-10-01T10:00:00|2026-10-01T11:00:00|01:00:00|3600|"
    "billing=2,cpu=2,gres/gpu=2,mem=8G,node=2|hpc[01-02]|COMPLETED",
    "500_3.batch|503.batch|batch||vision||2026-10-01T10:00:00|2026-10-01T10:00:00|2026-10-01T11:00:00|01:00:00|3600|"
    "cpu=1,gres/gpu=1,mem=4G,node=1|hpc01|COMPLETED",
]


def pod_series(node: str, pod: str, project: str, resource: str) -> dict[str, list[dict]]:
    ids = {"namespace": "ml", "pod": pod, "uid": f"uid-{pod}"}
    return {
        "kube_pod_info": [series({"__name__": "kube_pod_info", **ids, "node": node}, MINUTES, "1")],
        "kube_pod_labels": [
            series({"__name__": "kube_pod_labels", **ids, "label_project_id": project}, MINUTES, "1")
        ],
        "kube_pod_container_resource_requests": [
            series(
                {"__name__": "kube_pod_container_resource_requests", **ids, "container": "main",
                 "node": node, "resource": resource, "unit": "integer"},
                MINUTES, "1",
            )
        ],
    }  # fmt: skip


def write_case(landing: Path) -> None:
    """This suite's case in ``landing`` (tests/python/hand_cases.py lands it beside the others')."""
    dcgm: list[dict] = []
    kube: dict[str, list[dict]] = {"kube_node_info": []}

    def add_pod(node: str, pod: str, project: str, resource: str) -> None:
        for metric, items in pod_series(node, pod, project, resource).items():
            kube.setdefault(metric, []).extend(items)

    def gpu(node: str, uuid: str, **labels: str) -> dict[str, str]:
        return {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": uuid, "Hostname": node,
                "modelName": A100, **labels}  # fmt: skip

    def add_node(node: str, instance: str) -> None:
        kube["kube_node_info"].append(
            series({"__name__": "kube_node_info", "node": node,
                    "provider_id": f"aws:///us-east-1a/{instance}"}, MINUTES, "1")
        )  # fmt: skip

    for node, (instance, uuid, instances) in MIG_NODES.items():
        add_node(node, instance)
        for gi, profile, pod, project in instances:
            labels = {"GPU_I_ID": gi, "GPU_I_PROFILE": profile, "namespace": "ml", "pod": pod}
            dcgm.append(series(gpu(node, uuid, **labels), MINUTES, "50"))
            add_pod(node, pod, project, "nvidia_com_mig_" + profile.replace(".", "_"))
    for node, pods in TS_NODES.items():
        add_node(node, f"i-{node}")
        for pod, project, util in pods:
            dcgm.append(
                series(gpu(node, f"GPU-{node}", namespace="ml", pod=pod), MINUTES, str(util))
            )
            add_pod(node, pod, project, "nvidia_com_gpu")
    add_node("gap", "i-gap")
    seen = [m for m in MINUTES if not 20 <= m < 40]
    dcgm.append(series(gpu("gap", "GPU-gap", namespace="ml", pod="gap-1"), seen, "80"))
    add_pod("gap", "gap-1", "g1", "nvidia_com_gpu")

    write_prom(
        landing / "metrics" / "dcgm" / "k8s" / "2026-10-01" / "DCGM_FI_DEV_GPU_UTIL.json", dcgm
    )
    for metric, items in kube.items():
        for copy in ("", ".rescrape"):  # a second scraper: every kube file landed twice
            write_prom(
                landing / "metrics" / "kube" / "k8s" / "2026-10-01" / f"{metric}{copy}.json", items
            )
    pools = landing / "reference" / "allocation_pools" / "shared_gpus.csv"
    pools.parent.mkdir(parents=True, exist_ok=True)
    pools.write_text(POOLS, encoding="utf-8")

    hpc = [
        series(gpu("hpc01", "GPU-h1", hpc_job="503"), MINUTES, "90"),
        series(gpu("hpc02", "GPU-h2"), MINUTES, "70"),
    ]
    write_prom(
        landing / "metrics" / "dcgm" / "hpc" / "2026-10-01" / "DCGM_FI_DEV_GPU_UTIL.json", hpc
    )
    sacct = landing / "scheduler" / "slurm" / "hpc" / "sacct-2026-10-01.txt"
    sacct.parent.mkdir(parents=True, exist_ok=True)
    sacct.write_text("\n".join(SACCT) + "\n", encoding="utf-8")

    # a GPU scraped every 10 minutes from 09:00 to 10:00, alone in its cluster and on no bill line
    slow = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-slow", "Hostname": "slow",
            "modelName": A100}  # fmt: skip
    write_prom(
        landing / "metrics" / "dcgm" / "slow" / "2026-10-01" / "DCGM_FI_DEV_GPU_UTIL.json",
        [series(slow, list(range(-60, 1, 10)), "50")],
    )

    write_focus(
        landing / "billing" / "focus" / "2026-10" / "shared_gpus.csv",
        [node_hour_line(ACCOUNT, resource, cost) for resource, cost in BILL.items()],
    )


def per_workload(
    warehouse: Warehouse, resource_id: str, places: str = "0.01"
) -> dict[str, Decimal]:
    """Each workload's money on one bill line, to the cent (what a statement shows).

    GPU time is counted in whole milliseconds per sample (3/7 of a 60 s sample is 25,714 ms), so an
    uneven MIG split is exact to the bill line but may differ from the paper ratio below 1e-4; the
    line itself must sum exactly to the bill, asserted here at full precision.
    """
    rows = warehouse.sql(
        "select coalesce(workload_id, allocation_kind), sum(billed_cost) from marts.fct_cost_allocation"
        f" where resource_id = '{resource_id}' group by 1"
    )
    assert sum(cost for _, cost in rows) == D(BILL[resource_id])
    return {
        (workload.split("/")[2] if workload.count("/") >= 3 else workload): cost.quantize(D(places))
        for workload, cost in rows
    }


def test_seven_way_mig_split_of_one_gpu_hour(hand_warehouse):
    assert per_workload(hand_warehouse, "i-mig7") == {f"mig7-p{i}": D("1.00") for i in range(1, 8)}


def test_mixed_mig_profiles_by_compute_slices(hand_warehouse):
    assert per_workload(hand_warehouse, "i-migmix") == {
        "mix-a": D("3.00"), "mix-b": D("2.00"), "mix-c": D("1.00"), "mix-d": D("1.00"),
    }  # fmt: skip


def test_four_replica_time_sliced_gpu_by_request(hand_warehouse):
    assert per_workload(hand_warehouse, "i-ts") == {pod: D("1.00") for pod, _, _ in TS_PODS}


def test_a_telemetry_gap_is_not_idle_time(hand_warehouse):
    assert per_workload(hand_warehouse, "i-gap") == {"gap-1": D("3.00")}
    (kinds,) = hand_warehouse.sql(
        "select list(distinct allocation_kind) from marts.fct_cost_allocation where resource_id = 'i-gap'"
    )[0]
    assert kinds == ["usage"]


def test_slurm_array_task_across_a_hostlist_pays_both_nodes(hand_warehouse):
    rows = hand_warehouse.sql(
        "select resource_id, workload_id, allocation_kind, billed_cost from marts.fct_cost_allocation"
        " where resource_id in ('hpc01', 'hpc02') order by 1"
    )
    assert rows == [
        ("hpc01", "hpc/slurm/500_3", "usage", D("6.00")),
        ("hpc02", "hpc/slurm/500_3", "usage", D("6.00")),
    ]
    # a valid Slurm account is an explicit tag: the learned model trains on it, and it is not "untagged"
    (known,) = hand_warehouse.sql(
        "select known_project_id from intermediate.int_workload_features where workload_id = 'hpc/slurm/500_3'"
    )[0]
    assert known == "vision"


def test_duplicated_scrapes_count_once_and_the_hour_reconciles(hand_warehouse):
    (pods,) = hand_warehouse.sql(
        "select count(*) from staging.stg_kube__pods where cluster_id = 'k8s'"
    )[0]
    assert pods == 7 + 4 + 4 + 4 + 1
    (requested,) = hand_warehouse.sql(
        "select sum(requested_gpu_ms) from intermediate.int_gpu_usage_hourly where node_name = 'gap'"
    )[0]
    assert requested == 3_600_000  # one GPU for one hour, not two
    residuals = hand_warehouse.sql(
        "select billed_residual, effective_residual from marts.rpt_reconciliation"
        f" where billing_account_id = '{ACCOUNT}'"
    )
    assert residuals == [(0, 0)]
    (total,) = hand_warehouse.sql(
        "select sum(billed_cost) from marts.fct_cost_allocation"
        f" where billing_account_id = '{ACCOUNT}'"
    )[0]
    assert total == sum(D(v) for v in BILL.values())


def test_mig_by_memory_share(hand_variant_warehouse):
    assert per_workload(hand_variant_warehouse, "i-migmix", places="0.001") == {
        "mix-a": D("3.500"), "mix-b": D("1.750"), "mix-c": D("0.875"), "mix-d": D("0.875"),
    }  # fmt: skip
    assert per_workload(hand_variant_warehouse, "i-mig7") == {
        f"mig7-p{i}": D("1.00") for i in range(1, 8)
    }


def test_time_sliced_gpu_by_measured_use(hand_variant_warehouse):
    # tsu on the `used` basis (its pool), under the `used` split and the `visible` idle policy: no idle row
    assert per_workload(hand_variant_warehouse, "i-tsu") == {
        "tsu-1": D("0.40"), "tsu-2": D("0.80"), "tsu-3": D("1.20"), "tsu-4": D("1.60"),
    }  # fmt: skip
    (basis,) = hand_variant_warehouse.sql(
        "select list(distinct allocation_basis) from marts.fct_cost_allocation where resource_id = 'i-tsu'"
    )[0]
    assert basis == ["used"]


def test_an_incremental_run_keeps_a_slots_own_step(hand_warehouse):
    # the slow GPU: hour 10 holds one sample. A run whose window starts at 10:00 (lookback 0 from the
    # latest hour built, 10:00) must still count that sample as 600 s (the series' step, known from the
    # samples before the window), not the 60 s default: the incremental build equals the full one.
    def slow_hours(warehouse: Path) -> list[tuple]:
        return hand_warehouse.sql(
            f"select hour_start_epoch - {T0}, sum(gpu_ms) from intermediate.int_gpu_usage_hourly"
            " where node_name = 'slow' group by 1 order by 1",
            warehouse=warehouse,
        )

    (latest,) = hand_warehouse.sql(
        "select max(hour_start_epoch) from intermediate.int_gpu_usage_hourly"
    )[0]
    assert latest == T0  # so the window of a lookback-0 run starts at 10:00
    assert slow_hours(hand_warehouse.path) == [(-3600, 3_600_000), (0, 600_000)]
    warehouse = hand_warehouse.copy("incremental")
    # only the usage model and what it reads: nothing downstream is asserted
    result = hand_warehouse.dbt(
        "build", "--select", "+int_gpu_usage_hourly", "--vars", "{gpucost_lookback_hours: 0}",
        warehouse=warehouse,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-6000:]
    assert "incremental model intermediate.int_gpu_usage_hourly" in result.stdout
    assert slow_hours(warehouse) == [(-3600, 3_600_000), (0, 600_000)]
