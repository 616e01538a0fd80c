"""Storage and network bill lines: volumes split over the pods that held their claim, buckets and egress.

One hand-built day (2026-10-01, UTC) of one cluster ``k8s`` whose money can be worked out on paper
(BilledCost = EffectiveCost on every line; the bill totals 34.00):

* ``vol-0aaa1111`` (10.00): the disk behind PersistentVolume ``pvc-aaa`` (EBS CSI volume handle), bound
  to claim ``ml/ckpt``. Pod ``train-a`` (project llm-pretrain, team nlp) held the claim 00:00-16:00, pod
  ``train-b`` (rag-search, team search) 08:00-16:00: its spec still names the claim until 20:00, but it
  completed at 16:00 (kube_pod_completion_time), and a completed pod holds nothing. 16 h : 8 h = 2 : 1, so
  train-a pays 10 x 2/3 = 6.666666666666666667 (it takes the one 1e-18 unit left over: the larger
  remainder) and train-b 3.333333333333333333; on a statement 6.67 and 3.33.
* ``vol-0bbb2222`` (4.00): the disk behind ``pvc-bbb`` (the in-tree ``ebs_volume_id``
  ``aws://us-east-1a/vol-0bbb2222``), bound to claim ``ml/scratch`` that no pod held: pod ``old-c`` is still
  listed with the claim in its spec from 20:00, but it completed the day before. One ``unallocated`` row,
  ``volume_without_pod: k8s/ml/scratch``.
* ``arn:aws:ec2:us-east-1:123456789012:volume/vol-0ccc3333`` (3.00): the bill names the disk by its ARN
  (as some FOCUS exports do); the volume handle is ``vol-0ccc3333``, claim ``ml/data``, held by train-a
  all day: train-a pays 3.00.
* ``vol-0eee5555`` (2.00): a disk behind ``pvc-eee`` (held by train-a) whose bill line carries the tag
  ``project_id: rag-search``: a tag on the bill is the owner's declaration, it wins (``direct``).
* bucket ``acme-vision-datasets`` (5.00) tagged ``vision-data``: direct to vision-data (team vision).
* egress tagged ``llm-pretrain`` (1.00): direct.
* egress untagged (9.00): shared by policy, in proportion to the effective cost placed on each owner in
  the account and month: nlp 6.666666666666666667 + 3 + 1 = 10.666666666666666667, search
  3.333333333333333333 + 2 = 5.333333333333333333, vision 5, unallocated 4 (of 25): 9 x those / 25 =
  3.84 / 1.92 / 1.80 / 1.44.

Statement (team totals, cents): nlp 14.51, search 7.25, vision 6.80, __unallocated__ 5.44; sum 34.00.
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from gpucost.core.money import UNIT, from_units, to_units
from tests.python.conftest import Warehouse, run_dbt
from tests.python.reference.storage import allocate_volume_lines

D = Decimal
DAY = int(datetime(2026, 10, 1, tzinfo=UTC).timestamp())
HOUR = 3600
STEP = 300
ARN = "arn:aws:ec2:us-east-1:123456789012:volume/vol-0ccc3333"

# resource id -> (billed cost, tags, description, service)
BILL = {
    "vol-0aaa1111": ("10.00", {}, "EBS gp3 provisioned storage", "Amazon Elastic Block Store"),
    "vol-0bbb2222": ("4.00", {}, "EBS gp3 provisioned storage", "Amazon Elastic Block Store"),
    ARN: ("3.00", {}, "EBS gp3 provisioned storage", "Amazon Elastic Block Store"),
    "vol-0eee5555": (
        "2.00", {"project_id": "rag-search"}, "EBS gp3 provisioned storage", "Amazon Elastic Block Store"
    ),
    "acme-vision-datasets": (
        "5.00", {"project_id": "vision-data"}, "S3 standard storage", "Amazon Simple Storage Service"
    ),
    "egress-tagged": ("1.00", {"project_id": "llm-pretrain"}, "data transfer out", "AWS Data Transfer"),
    "egress-untagged": ("9.00", {}, "data transfer out", "AWS Data Transfer"),
}  # fmt: skip


def _series(metric: dict[str, str], start: int, end: int, value: str) -> dict:
    return {"metric": metric, "values": [[t, value] for t in range(start, end, STEP)]}


def _write_prom(path: Path, result: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    path.write_text(json.dumps(doc), encoding="utf-8")


def make_landing(root: Path) -> Path:
    landing = root / "landing"
    end = DAY + 24 * HOUR
    kube: dict[str, list[dict]] = {}

    def add(name: str, labels: dict[str, str], start: int, stop: int, value: str = "1") -> None:
        kube.setdefault(name, []).append(_series({"__name__": name, **labels}, start, stop, value))

    pods = {  # pod -> (project, listed from, listed until, started at, completed at)
        "train-a": ("llm-pretrain", DAY, DAY + 16 * HOUR, DAY, DAY + 16 * HOUR),
        "train-b": ("rag-search", DAY + 8 * HOUR, DAY + 20 * HOUR, DAY + 8 * HOUR, DAY + 16 * HOUR),
        # completed the day before, still listed (and spec'd with ml/scratch) from 20:00
        "old-c": ("vision-data", DAY + 20 * HOUR, DAY + 24 * HOUR, DAY - 10 * HOUR, DAY - 2 * HOUR),
    }
    for pod, (project, start, stop, started, completed) in pods.items():
        ids = {"namespace": "ml", "pod": pod, "uid": f"uid-{pod}"}
        add("kube_pod_info", {**ids, "node": "cpu-1"}, start, stop)
        add("kube_pod_labels", {**ids, "label_project_id": project}, start, stop)
        add("kube_pod_start_time", ids, start, stop, str(started))
        kube.setdefault("kube_pod_completion_time", []).append(
            {"metric": {"__name__": "kube_pod_completion_time", **ids, "container": "main"},
             "values": [[completed, str(completed)]]}
        )  # fmt: skip
    claims = {  # claim -> (volume, PV labels carrying the disk, pods holding it (spec'd from, until))
        "ckpt": ("pvc-aaa", {"csi_driver": "ebs.csi.aws.com", "csi_volume_handle": "vol-0aaa1111"},
                 {"train-a": (DAY, DAY + 16 * HOUR), "train-b": (DAY + 8 * HOUR, DAY + 20 * HOUR)}),
        "scratch": ("pvc-bbb", {"ebs_volume_id": "aws://us-east-1a/vol-0bbb2222"},
                    {"old-c": (DAY + 20 * HOUR, DAY + 24 * HOUR)}),
        "data": ("pvc-ccc", {"csi_driver": "ebs.csi.aws.com", "csi_volume_handle": "vol-0ccc3333"},
                 {"train-a": (DAY, DAY + 16 * HOUR)}),
        "tagged": ("pvc-eee", {"csi_driver": "ebs.csi.aws.com", "csi_volume_handle": "vol-0eee5555"},
                   {"train-a": (DAY, DAY + 16 * HOUR)}),
    }  # fmt: skip
    for claim, (volume, disk, holders) in claims.items():
        add("kube_persistentvolume_info",
            {"persistentvolume": volume, "storageclass": "gp3", **disk}, DAY, end)  # fmt: skip
        add("kube_persistentvolume_claim_ref",
            {"persistentvolume": volume, "claim_namespace": "ml", "name": claim}, DAY, end)  # fmt: skip
        add("kube_persistentvolumeclaim_info",
            {"namespace": "ml", "persistentvolumeclaim": claim, "storageclass": "gp3",
             "volumename": volume}, DAY, end)  # fmt: skip
        for pod, (start, stop) in holders.items():
            add("kube_pod_spec_volumes_persistentvolumeclaims_info",
                {"namespace": "ml", "pod": pod, "uid": f"uid-{pod}", "volume": claim,
                 "persistentvolumeclaim": claim}, start, stop)  # fmt: skip
    for metric, items in kube.items():
        _write_prom(landing / "metrics" / "kube" / "k8s" / "2026-10-01" / f"{metric}.json", items)

    org = landing / "reference" / "org_mapping.csv"
    org.parent.mkdir(parents=True)
    org.write_text(
        "project_id,project_name,team_id,team_name,cost_center\n"
        "llm-pretrain,LLM pretraining,nlp,NLP,CC-1\n"
        "rag-search,RAG search,search,Search,CC-2\n"
        "vision-data,Vision data,vision,Vision,CC-3\n",
        encoding="utf-8",
    )
    bill = landing / "billing" / "focus" / "2026-10" / "focus.csv"
    bill.parent.mkdir(parents=True)
    header = ["BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
              "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ChargeDescription",
              "ProviderName", "ServiceName", "ServiceCategory", "ResourceId", "BilledCost",
              "EffectiveCost", "InvoiceId", "Tags"]  # fmt: skip
    with bill.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for resource, (cost, tags, description, service) in BILL.items():
            category = "Networking" if "egress" in resource else "Storage"
            resource_id = "" if "egress" in resource else resource
            writer.writerow(["acct", "USD", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z",
                             "2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z", "Usage", description,
                             "AWS", service, category, resource_id, cost, cost, "INV-1",
                             json.dumps(tags) if tags else ""])  # fmt: skip
    return landing


# --------------------------------------------------------------------------------------------
# The pure split (gpucost.core.storage)
# --------------------------------------------------------------------------------------------


def test_volume_line_split_by_claim_holding_time_golden():
    lines = [{"charge_id": "c1", "billed_cost": D("10.00"), "effective_cost": D("8.80")}]
    mounts = [
        {"charge_id": "c1", "workload_id": "k8s/ml/train-a/uid-a", "mounted_ms": 16 * HOUR * 1000},
        {"charge_id": "c1", "workload_id": "k8s/ml/train-b/uid-b", "mounted_ms": 8 * HOUR * 1000},
    ]
    rows = {row["workload_id"]: row for row in allocate_volume_lines(lines, mounts)}
    assert rows["k8s/ml/train-a/uid-a"]["billed_cost"] == D("6.666666666666666667")
    assert rows["k8s/ml/train-b/uid-b"]["billed_cost"] == D("3.333333333333333333")
    assert rows["k8s/ml/train-a/uid-a"]["effective_cost"] == D("5.866666666666666667")
    assert rows["k8s/ml/train-b/uid-b"]["effective_cost"] == D("2.933333333333333333")
    assert sum(row["allocation_ratio"] for row in rows.values()) == 1
    assert {row["allocation_kind"] for row in rows.values()} == {"usage"}
    assert {row["allocation_basis"] for row in rows.values()} == {"volume_claim"}


def test_volume_nobody_held_is_one_unallocated_row_with_the_reason():
    lines = [
        {"charge_id": "c1", "billed_cost": D("4.00"), "effective_cost": D("4.00"),
         "claim_ids": "k8s/ml/scratch", "persistent_volume_ids": "k8s/pvc-bbb"},
        {"charge_id": "c2", "billed_cost": D("1.00"), "effective_cost": D("1.00"),
         "claim_ids": None, "persistent_volume_ids": "k8s/pvc-zzz"},
    ]  # fmt: skip
    # a pod that held the claim for 0 ms in the period does not make it held
    rows = allocate_volume_lines(lines, [{"charge_id": "c1", "workload_id": "w", "mounted_ms": 0}])
    assert [(r["charge_id"], r["allocation_kind"], r["unallocated_reason"], r["billed_cost"],
             r["allocation_ratio"]) for r in rows] == [
        ("c1", "unallocated", "volume_without_pod: k8s/ml/scratch", D("4.00"), D(1)),
        ("c2", "unallocated", "volume_without_claim: k8s/pvc-zzz", D("1.00"), D(1)),
    ]  # fmt: skip


def test_volume_split_conserves_and_ignores_order():
    lines = [
        {"charge_id": "c", "billed_cost": D("-0.07"), "effective_cost": D("100.000000000000000001")}
    ]
    mounts = [
        {"charge_id": "c", "workload_id": f"w{i}", "mounted_ms": ms}
        for i, ms in enumerate((1, 3, 7, 7, 1_000_003))
    ] + [{"charge_id": "c", "workload_id": "w1", "mounted_ms": 2}]  # a second run of w1 adds up
    forward = allocate_volume_lines(lines, mounts)
    backward = allocate_volume_lines(lines, list(reversed(mounts)))
    assert forward == backward
    assert sum(to_units(r["billed_cost"]) for r in forward) == to_units(D("-0.07"))
    assert sum(to_units(r["effective_cost"]) for r in forward) == to_units(
        D("100.000000000000000001")
    )
    assert sum(to_units(r["allocation_ratio"]) for r in forward) == UNIT
    assert all(r["billed_cost"] <= 0 for r in forward)  # a credit is never turned into a charge
    assert {r["workload_id"]: r["mounted_ms"] for r in forward}["w1"] == 5
    assert from_units(UNIT) == 1


def test_negative_mount_time_is_an_error():
    with pytest.raises(ValueError, match="negative"):
        allocate_volume_lines(
            [{"charge_id": "c", "billed_cost": D(1), "effective_cost": D(1)}],
            [{"charge_id": "c", "workload_id": "w", "mounted_ms": -1}],
        )


# --------------------------------------------------------------------------------------------
# The warehouse: the hand-built day end to end
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def storage_warehouse(tmp_path_factory) -> Warehouse:
    root = tmp_path_factory.mktemp("storage")
    landing = make_landing(root)
    work = root / "work"
    work.mkdir()
    warehouse = Warehouse(landing=landing, path=work / "gpucost.duckdb", work=work)
    result = run_dbt(landing, warehouse.path, work, "build")
    assert result.returncode == 0, result.stdout[-6000:]
    return warehouse


def _rows(warehouse: Warehouse, resource_id: str) -> list[tuple]:
    return warehouse.sql(
        "select coalesce(split_part(workload_id, '/', 3), ''), team_id, project_id, line_class,"
        " allocation_kind, allocation_basis, attribution_method, unallocated_reason, billed_cost"
        f" from marts.fct_cost_allocation where coalesce(resource_id, '') = '{resource_id}'"
        " order by 1, 2"
    )


@pytest.mark.warehouse
def test_volume_split_between_two_pods_by_holding_time(storage_warehouse):
    assert _rows(storage_warehouse, "vol-0aaa1111") == [
        ("train-a", "nlp", "llm-pretrain", "volume_claim", "usage", "volume_claim", "pod_label", None,
         D("6.666666666666666667")),
        ("train-b", "search", "rag-search", "volume_claim", "usage", "volume_claim", "pod_label", None,
         D("3.333333333333333333")),
    ]  # fmt: skip
    (mounts,) = storage_warehouse.sql(
        "select list(mounted_ms order by workload_id) from intermediate.int_volume_costs_prorated"
        " where charge_id in (select charge_id from intermediate.int_volume_claim_lines"
        " where volume_key = 'vol-0aaa1111')"
    )[0]
    assert mounts == [16 * HOUR * 1000, 8 * HOUR * 1000]  # train-b completed at 16:00


@pytest.mark.warehouse
def test_claim_without_pod_is_unallocated_with_reason(storage_warehouse):
    assert _rows(storage_warehouse, "vol-0bbb2222") == [
        ("", "__unallocated__", "__unallocated__", "volume_claim", "unallocated", "volume_claim", "none",
         "volume_without_pod: k8s/ml/scratch", D("4.00")),
    ]  # fmt: skip


@pytest.mark.warehouse
def test_disk_named_by_arn_meets_its_volume_handle(storage_warehouse):
    assert _rows(storage_warehouse, ARN) == [
        ("train-a", "nlp", "llm-pretrain", "volume_claim", "usage", "volume_claim", "pod_label", None,
         D("3.00")),
    ]  # fmt: skip


@pytest.mark.warehouse
def test_tags_go_direct_for_disks_buckets_and_egress(storage_warehouse):
    # a tag on the bill wins over the pods holding the disk's claim
    assert _rows(storage_warehouse, "vol-0eee5555") == [
        ("", "search", "rag-search", "direct", "direct", "whole_line", "bill_tag", None, D("2.00")),
    ]  # fmt: skip
    assert _rows(storage_warehouse, "acme-vision-datasets") == [
        ("", "vision", "vision-data", "direct", "direct", "whole_line", "bill_tag", None, D("5.00")),
    ]  # fmt: skip
    rows = storage_warehouse.sql(
        "select team_id, project_id, line_class, cost_component, allocation_kind, billed_cost"
        " from marts.fct_cost_allocation where service_name = 'AWS Data Transfer'"
        " and line_class = 'direct'"
    )
    assert rows == [("nlp", "llm-pretrain", "direct", "network", "direct", D("1.00"))]


@pytest.mark.warehouse
def test_untagged_egress_is_shared_by_policy(storage_warehouse):
    rows = storage_warehouse.sql(
        "select team_id, allocation_kind, allocation_basis, cost_component, sum(billed_cost)"
        " from marts.fct_cost_allocation where line_class = 'shared' group by all order by 1"
    )
    assert [(team, kind, basis, component, cost.quantize(D("0.01"))) for team, kind, basis, component, cost
            in rows] == [
        ("__unallocated__", "unallocated", "shared_by_effective_cost", "network", D("1.44")),
        ("nlp", "shared", "shared_by_effective_cost", "network", D("3.84")),
        ("search", "shared", "shared_by_effective_cost", "network", D("1.92")),
        ("vision", "shared", "shared_by_effective_cost", "network", D("1.80")),
    ]  # fmt: skip
    assert sum(row[-1] for row in rows) == D("9.00")


@pytest.mark.warehouse
def test_storage_day_reconciles_to_the_cent(storage_warehouse):
    assert storage_warehouse.sql(
        "select billed_residual, effective_residual from marts.rpt_reconciliation"
    ) == [(0, 0)]
    statements = dict(
        storage_warehouse.sql(
            "select team_id, sum(billed_cost) from marts.fct_chargeback_monthly group by 1"
        )
    )
    assert statements == {
        "nlp": D("14.51"), "search": D("7.25"), "vision": D("6.80"), "__unallocated__": D("5.44"),
    }  # fmt: skip
    assert sum(statements.values()) == sum(D(cost) for cost, *_ in BILL.values()) == D("34.00")


# --------------------------------------------------------------------------------------------
# The generated month: claims, their disks, tagged and untagged egress
# --------------------------------------------------------------------------------------------


@pytest.mark.warehouse
def test_generated_month_routes_storage_and_egress_and_reconciles(
    generated_month, generated_warehouse
):
    _, summary = generated_month
    claims = summary["volume_claims"]
    assert len(claims) == 6  # per cluster: a checkpoint, a notebook home, a scratch claim
    for claim in claims:
        rows = generated_warehouse.sql(
            "select distinct line_class, allocation_kind, split_part(workload_id, '/', 4),"
            " unallocated_reason from marts.fct_cost_allocation"
            f" where resource_id = '{claim['volume_id']}'"
        )
        assert {row[0] for row in rows} == {"volume_claim"}
        expected = f"volume_without_pod: {claim['cluster']}/{claim['namespace']}/{claim['claim']}"
        held = {row[2] for row in rows if row[2] is not None}
        # only the pods that held the claim pay for its disk; a day nobody held it is unallocated
        assert held <= set(claim["holders"])
        assert bool(held) == bool(claim["holders"])
        assert {row[1:] for row in rows if row[2] is None} <= {("unallocated", None, expected)}
    # one tagged egress line a day goes direct, the untagged ones are shared by policy
    egress = dict(
        generated_warehouse.sql(
            "select line_class, count(distinct charge_id) from marts.fct_cost_allocation"
            " where service_name = 'AWS Data Transfer' group by 1"
        )
    )
    assert egress == {
        "direct": summary["days"],
        "shared": summary["days"] * len(summary["clusters"]),
    }
    (residuals,) = generated_warehouse.sql(
        "select max(abs(billed_residual)), max(abs(effective_residual)), bool_and(is_reconciled)"
        " from marts.rpt_reconciliation"
    )
    assert residuals == (0, 0, True)
    (cents,) = generated_warehouse.sql("select sum(billed_cost) from marts.fct_chargeback_monthly")[
        0
    ]
    assert cents == summary["billed_total"].quantize(D("0.01"))
