"""Fractional and shared GPUs priced right: MIG slices, time-sliced replicas, Slurm jobs, telemetry gaps.

One hand-built hour (10:00-11:00 UTC) whose expected money can be worked out on paper:

* ``mig7``: one A100 split into seven 1g.10gb MIG instances, one pod on each; the node-hour costs 7.00,
  so each pod pays exactly 1.00 (each instance is 1 of 7 compute slices).
* ``migmix``: 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb on an 80 GB A100 for 7.00: 3.00 / 2.00 / 1.00 / 1.00 by
  compute slices; 3.50 / 1.75 / 0.875 / 0.875 by memory (var gpucost_mig_share: memory).
* ``ts``: one GPU time-sliced between 4 pods (each its own series on the same UUID, busy 10/20/30/40 %),
  4.00: 1.00 each by request; under the `used` basis with proportional idle, 0.40 / 0.80 / 1.20 / 1.60.
* ``gap``: one pod whose exporter missed 20 minutes (a gap beyond gpucost_max_sample_gap_seconds); the
  missing scrape is not idle time: the pod pays the whole 3.00.
* ``hpc01`` / ``hpc02``: a Slurm array task (500_3, JobIDRaw 503) holding one GPU on each node
  (hostlist hpc[01-02]); hpc01's series carries the exporter's hpc_job label, hpc02's does not (matched by
  node and time). 6.00 per node: the job pays 12.00.
* a duplicated scrape: every kube file of the k8s cluster landed twice: nothing changes.
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from tests.python.conftest import Warehouse, run_dbt

pytestmark = pytest.mark.warehouse

D = Decimal
T0 = int(datetime(2026, 10, 1, 10, tzinfo=UTC).timestamp())
MINUTES = list(range(60))
A100 = "NVIDIA A100-SXM4-80GB"

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
TS_PODS = [("ts-1", "t1", 10), ("ts-2", "t2", 20), ("ts-3", "t3", 30), ("ts-4", "t4", 40)]
BILL = {
    "i-mig7": "7.00",
    "i-migmix": "7.00",
    "i-ts": "4.00",
    "i-gap": "3.00",
    "hpc01": "6.00",
    "hpc02": "6.00",
}
SACCT = [
    "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|ElapsedRaw|AllocTRES|NodeList|State",
    "500_3|503|sweep|bob|vision|gpu|2026-10-01T09:59:00|2026-10-01T10:00:00|2026-10-01T11:00:00|01:00:00|3600|"
    "billing=2,cpu=2,gres/gpu=2,mem=8G,node=2|hpc[01-02]|COMPLETED",
    "500_3.batch|503.batch|batch||vision||2026-10-01T10:00:00|2026-10-01T10:00:00|2026-10-01T11:00:00|01:00:00|3600|"
    "cpu=1,gres/gpu=1,mem=4G,node=1|hpc01|COMPLETED",
]


def series(metric: dict[str, str], minutes: list[int], value: str) -> dict:
    return {"metric": metric, "values": [[T0 + 60 * m, value] for m in minutes]}


def write_prom(path: Path, result: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    path.write_text(json.dumps(doc), encoding="utf-8")


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


def make_landing(root: Path) -> Path:
    landing = root / "landing"
    dcgm: list[dict] = []
    kube: dict[str, list[dict]] = {"kube_node_info": []}

    def add_pod(node: str, pod: str, project: str, resource: str) -> None:
        for metric, items in pod_series(node, pod, project, resource).items():
            kube.setdefault(metric, []).extend(items)

    def gpu(node: str, uuid: str, **labels: str) -> dict[str, str]:
        return {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": uuid, "Hostname": node,
                "modelName": A100, **labels}  # fmt: skip

    for node, (instance, uuid, instances) in MIG_NODES.items():
        kube["kube_node_info"].append(
            series({"__name__": "kube_node_info", "node": node,
                    "provider_id": f"aws:///us-east-1a/{instance}"}, MINUTES, "1")
        )  # fmt: skip
        for gi, profile, pod, project in instances:
            labels = {"GPU_I_ID": gi, "GPU_I_PROFILE": profile, "namespace": "ml", "pod": pod}
            dcgm.append(series(gpu(node, uuid, **labels), MINUTES, "50"))
            add_pod(node, pod, project, "nvidia_com_mig_" + profile.replace(".", "_"))
    kube["kube_node_info"].append(
        series({"__name__": "kube_node_info", "node": "ts", "provider_id": "aws:///us-east-1a/i-ts"},
               MINUTES, "1")
    )  # fmt: skip
    for pod, project, util in TS_PODS:
        dcgm.append(series(gpu("ts", "GPU-ts", namespace="ml", pod=pod), MINUTES, str(util)))
        add_pod("ts", pod, project, "nvidia_com_gpu")
    kube["kube_node_info"].append(
        series({"__name__": "kube_node_info", "node": "gap", "provider_id": "aws:///us-east-1a/i-gap"},
               MINUTES, "1")
    )  # fmt: skip
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

    hpc = [
        series(gpu("hpc01", "GPU-h1", hpc_job="503"), MINUTES, "90"),
        series(gpu("hpc02", "GPU-h2"), MINUTES, "70"),
    ]
    write_prom(
        landing / "metrics" / "dcgm" / "hpc" / "2026-10-01" / "DCGM_FI_DEV_GPU_UTIL.json", hpc
    )
    sacct = landing / "scheduler" / "slurm" / "hpc" / "sacct-2026-10-01.txt"
    sacct.parent.mkdir(parents=True)
    sacct.write_text("\n".join(SACCT) + "\n", encoding="utf-8")

    bill = landing / "billing" / "focus" / "2026-10" / "focus.csv"
    bill.parent.mkdir(parents=True)
    header = ["BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
              "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ChargeDescription",
              "ProviderName", "ServiceName", "ServiceCategory", "ResourceId", "BilledCost",
              "EffectiveCost", "InvoiceId", "Tags"]  # fmt: skip
    with bill.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for resource, cost in BILL.items():
            writer.writerow(["acct", "USD", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z",
                             "2026-10-01T10:00:00Z", "2026-10-01T11:00:00Z", "Usage", "GPU node",
                             "AWS", "Amazon EC2", "Compute", resource, cost, cost, "INV-1", ""])  # fmt: skip
    return landing


def build(root: Path, *extra: str) -> Warehouse:
    landing = root / "landing"
    if not landing.exists():
        make_landing(root)
    work = root / f"work{len(list(root.glob('work*')))}"
    work.mkdir()
    warehouse = Warehouse(landing=landing, path=work / "gpucost.duckdb", work=work)
    result = run_dbt(landing, warehouse.path, work, "build", *extra)
    assert result.returncode == 0, result.stdout[-6000:]
    return warehouse


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


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("shared_gpus")


@pytest.fixture(scope="module")
def default_build(root) -> Warehouse:
    return build(root)


def test_seven_way_mig_split_of_one_gpu_hour(default_build):
    assert per_workload(default_build, "i-mig7") == {f"mig7-p{i}": D("1.00") for i in range(1, 8)}


def test_mixed_mig_profiles_by_compute_slices(default_build):
    assert per_workload(default_build, "i-migmix") == {
        "mix-a": D("3.00"), "mix-b": D("2.00"), "mix-c": D("1.00"), "mix-d": D("1.00"),
    }  # fmt: skip


def test_four_replica_time_sliced_gpu_by_request(default_build):
    assert per_workload(default_build, "i-ts") == {pod: D("1.00") for pod, _, _ in TS_PODS}


def test_a_telemetry_gap_is_not_idle_time(default_build):
    assert per_workload(default_build, "i-gap") == {"gap-1": D("3.00")}
    (kinds,) = default_build.sql(
        "select list(distinct allocation_kind) from marts.fct_cost_allocation where resource_id = 'i-gap'"
    )[0]
    assert kinds == ["usage"]


def test_slurm_array_task_across_a_hostlist_pays_both_nodes(default_build):
    rows = default_build.sql(
        "select resource_id, workload_id, allocation_kind, billed_cost from marts.fct_cost_allocation"
        " where resource_id in ('hpc01', 'hpc02') order by 1"
    )
    assert rows == [
        ("hpc01", "hpc/slurm/500_3", "usage", D("6.00")),
        ("hpc02", "hpc/slurm/500_3", "usage", D("6.00")),
    ]
    # a valid Slurm account is an explicit tag: the learned model trains on it, and it is not "untagged"
    (known,) = default_build.sql(
        "select known_project_id from intermediate.int_workload_features where workload_id = 'hpc/slurm/500_3'"
    )[0]
    assert known == "vision"


def test_duplicated_scrapes_count_once_and_the_hour_reconciles(default_build):
    (pods,) = default_build.sql(
        "select count(*) from staging.stg_kube__pods where cluster_id = 'k8s'"
    )[0]
    assert pods == 7 + 4 + 4 + 1
    (requested,) = default_build.sql(
        "select sum(requested_gpu_ms) from intermediate.int_gpu_usage_hourly where node_name = 'gap'"
    )[0]
    assert requested == 3_600_000  # one GPU for one hour, not two
    residuals = default_build.sql(
        "select billed_residual, effective_residual from marts.rpt_reconciliation"
    )
    assert residuals == [(0, 0)]
    (total,) = default_build.sql("select sum(billed_cost) from marts.fct_cost_allocation")[0]
    assert total == sum(D(v) for v in BILL.values())


def test_mig_by_memory_share(root):
    warehouse = build(root, "--vars", "{gpucost_mig_share: memory}")
    assert per_workload(warehouse, "i-migmix", places="0.001") == {
        "mix-a": D("3.500"), "mix-b": D("1.750"), "mix-c": D("0.875"), "mix-d": D("0.875"),
    }  # fmt: skip
    assert per_workload(warehouse, "i-mig7") == {f"mig7-p{i}": D("1.00") for i in range(1, 8)}


def test_time_sliced_gpu_by_measured_use(root):
    warehouse = build(
        root, "--vars", "{gpucost_allocation_basis: used, gpucost_shared_gpu_split: used}"
    )
    assert per_workload(warehouse, "i-ts") == {
        "ts-1": D("0.40"), "ts-2": D("0.80"), "ts-3": D("1.20"), "ts-4": D("1.60"),
    }  # fmt: skip


def test_an_incremental_run_keeps_a_slots_own_step(tmp_path):
    # a GPU scraped every 10 minutes from 09:00 to 10:00: hour 10 holds one sample. A run whose window
    # starts at 10:00 (lookback 0) must still count that sample as 600 s (the series' step, known from
    # the samples before the window), not the 60 s default: the incremental build equals the full one.
    landing = make_landing(tmp_path)
    minutes = list(range(-60, 1, 10))
    slow = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-slow", "Hostname": "slow",
            "modelName": A100}  # fmt: skip
    write_prom(
        landing / "metrics" / "dcgm" / "k8s" / "2026-10-01" / "DCGM_FI_DEV_GPU_UTIL.slow.json",
        [series(slow, minutes, "50")],
    )
    warehouse = tmp_path / "gpucost.duckdb"
    lookback = ("--vars", "{gpucost_lookback_hours: 0}")
    for _ in range(2):  # a full build, then an incremental one over hour 10 only
        result = run_dbt(landing, warehouse, tmp_path, "build", *lookback)
        assert result.returncode == 0, result.stdout[-6000:]
    assert "incremental model intermediate.int_gpu_usage_hourly" in result.stdout
    with duckdb.connect(str(warehouse), read_only=True) as con:
        slow_hours = con.sql(
            f"select hour_start_epoch - {T0}, sum(gpu_ms) from intermediate.int_gpu_usage_hourly"
            " where node_name = 'slow' group by 1 order by 1"
        ).fetchall()
    assert slow_hours == [(-3600, 3_600_000), (0, 600_000)]
