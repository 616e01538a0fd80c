"""Tests for the synthetic landing-zone generator (small configs, fast)."""

from __future__ import annotations

import csv
import hashlib
import json
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from gpucost.synth import MonthConfig, generate_month
from gpucost.synth.reference import DCGM_METRICS, FOCUS_COLUMNS, HANDOFF_PROJECT, KUBE_METRICS

EXPECTED_HEADER = [
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
]
# The scheduled Kubernetes fleet alone: the Slurm queue, the shared-GPU (MIG / time-sliced) node and the
# CPU-only pods break this file's invariants on purpose (several pods on one GPU, a third cluster); they
# are tested in test_usage_sources.py on the session's generated month.
FLEET_ONLY = {"slurm_nodes": 0, "shared_gpus": False, "cpu_only_pods": False}
TINY = {"nodes": 2, "days": 1, "step_seconds": 600, "clusters": 1, **FLEET_ONLY}
MODERATE = {"nodes": 6, "days": 3, "step_seconds": 900, "clusters": 2, **FLEET_ONLY}


# ------------------------------------------------------------------------------ helpers


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _series(root: Path, family: str, metric: str):
    """Yield (cluster, labels, [(ts, value_str), ...]) for every series of a metric."""
    for path in sorted((root / "metrics" / family).glob(f"*/*/{metric}.json")):
        doc = json.loads(path.read_text())
        for s in doc["data"]["result"]:
            yield path.parts[-3], s["metric"], s["values"]


def _bill_rows(root: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted((root / "billing" / "focus").glob("*/focus_export_*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            rows.extend(csv.DictReader(f))
    return rows


def _hostname(labels: dict[str, str]) -> str:
    return labels.get("Hostname", labels.get("hostname", ""))


def _iso_hour(ts: int) -> str:
    return datetime.fromtimestamp(ts - ts % 3600, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def moderate(tmp_path_factory) -> tuple[Path, dict, list[str]]:
    out = tmp_path_factory.mktemp("moderate")
    messages: list[str] = []
    summary = generate_month(out, MonthConfig(seed=7, **MODERATE), progress=messages.append)
    return out, summary, messages


@pytest.fixture(scope="module")
def month_boundary(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("boundary")
    summary = generate_month(out, MonthConfig(seed=3, start="2026-10-31", **TINY | {"days": 2}))
    return out, summary


# ------------------------------------------------------------------------------ tests


def test_same_seed_is_byte_identical_and_other_seed_differs(tmp_path: Path) -> None:
    a = generate_month(tmp_path / "a", MonthConfig(seed=11, **TINY))
    b = generate_month(tmp_path / "b", MonthConfig(seed=11, **TINY))
    c = generate_month(tmp_path / "c", MonthConfig(seed=12, **TINY))
    da, db, dc = (_tree_digest(tmp_path / x) for x in "abc")
    assert da == db
    assert len(da) == a["files"] == b["files"]
    assert a["billed_total"] == b["billed_total"]
    assert da.keys() != dc.keys() or da != dc  # bill file name carries the account id
    changed = [k for k in da if da[k] != dc.get(k)]
    assert len(changed) > len(da) // 2
    assert c["billed_total"] != a["billed_total"] or c["samples"] != a["samples"]


def test_layout_and_summary(moderate) -> None:
    root, summary, messages = moderate
    assert summary["out_dir"] == str(root)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert len(files) == summary["files"]
    for cluster in ("gpu-east", "gpu-west"):
        for date in ("2026-10-01", "2026-10-02", "2026-10-03"):
            for m in DCGM_METRICS:
                assert (root / "metrics" / "dcgm" / cluster / date / f"{m}.json").is_file()
            for m in KUBE_METRICS:
                assert (root / "metrics" / "kube" / cluster / date / f"{m}.json").is_file()
    bill = (
        root / "billing" / "focus" / "2026-10" / f"focus_export_{summary['billing_account_id']}.csv"
    )
    assert bill.is_file()
    assert (root / "reference" / "org_mapping.csv").is_file()
    assert isinstance(summary["billed_total"], Decimal)
    assert isinstance(summary["effective_total"], Decimal)
    assert len(messages) == MODERATE["days"]
    assert messages[0].startswith("day 1/3")
    assert summary["pods"] > 30


def test_every_json_is_a_prometheus_matrix(moderate) -> None:
    root, summary, _ = moderate
    dcgm_values = 0
    for path in sorted((root / "metrics").rglob("*.json")):
        doc = json.loads(path.read_text())
        assert doc["status"] == "success"
        assert doc["data"]["resultType"] == "matrix"
        step = MODERATE["step_seconds"]
        for s in doc["data"]["result"]:
            # the file is named after the metric, `:` as `_` (vllm:prompt_tokens_total)
            assert s["metric"]["__name__"].replace(":", "_") == path.stem
            assert all(isinstance(v, str) for v in s["metric"].values())
            assert s["values"], path
            prev = None
            for ts, value in s["values"]:
                assert isinstance(ts, int) and isinstance(value, str)
                assert ts % step == 0
                if prev is not None:
                    assert ts > prev
                prev = ts
                float(value)
            if "dcgm" in path.parts:
                dcgm_values += len(s["values"])
    assert dcgm_values == summary["samples"]


def test_dcgm_value_ranges_and_labels(moderate) -> None:
    root, _, _ = moderate
    hostname_keys: dict[str, set[str]] = defaultdict(set)
    for cluster, labels, values in _series(root, "dcgm", "DCGM_FI_DEV_GPU_UTIL"):
        hostname_keys[cluster] |= {k for k in labels if k.lower() == "hostname"}
        for key in ("gpu", "UUID", "device", "modelName", "DCGM_FI_DRIVER_VERSION", "pci_bus_id"):
            assert key in labels
        assert labels["instance"].endswith(":9400") and labels["job"] == "dcgm-exporter"
        assert labels["cluster"] == cluster
        utils = [int(v) for _, v in values]
        assert all(0 <= u <= 100 for u in utils)
        if "pod" not in labels:
            assert max(utils) <= 2  # idle GPU
            assert "namespace" not in labels and "container" not in labels
    assert hostname_keys == {"gpu-east": {"Hostname"}, "gpu-west": {"hostname"}}
    for _, _labels, values in _series(root, "dcgm", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
        assert all(0.0 <= float(v) <= 1.0 and len(v.split(".")[1]) == 6 for _, v in values)
    for _, _labels, values in _series(root, "dcgm", "DCGM_FI_DEV_POWER_USAGE"):
        assert all(20 < float(v) < 720 and len(v.split(".")[1]) == 3 for _, v in values)
    for _, labels, values in _series(root, "dcgm", "DCGM_FI_DEV_FB_USED"):
        assert all(v.isdigit() for _, v in values)
        if "pod" not in labels:
            assert all(int(v) < 100 for _, v in values)


def test_node_hours_billed_exactly_when_node_has_metrics(moderate) -> None:
    root, summary, _ = moderate
    node_hours: dict[str, set[str]] = defaultdict(set)
    for _, labels, values in _series(root, "kube", "kube_node_info"):
        instance = labels["provider_id"].rsplit("/", 1)[1]
        assert labels["provider_id"].startswith("aws:///")
        node_hours[instance] |= {_iso_hour(ts) for ts, _ in values}
    billed: dict[str, set[str]] = defaultdict(set)
    for row in _bill_rows(root):
        if row["ServiceName"] == "Amazon Elastic Compute Cloud" and row["ResourceId"]:
            assert row["ResourceId"] in node_hours  # every node line maps to a kube node
            assert row["ChargeCategory"] == "Usage" and row["ResourceType"] == "instance"
            assert row["ChargePeriodStart"] not in billed[row["ResourceId"]]  # no duplicates
            billed[row["ResourceId"]].add(row["ChargePeriodStart"])
    assert billed == node_hours
    assert len(node_hours) == MODERATE["nodes"]
    # the late node exists for fewer hours than the rest
    hours = sorted(len(h) for h in node_hours.values())
    assert hours[0] < hours[-1] == MODERATE["days"] * 24
    assert summary["late_node"] is not None


def test_billed_total_matches_csv_and_money_is_exact(moderate) -> None:
    root, summary, _ = moderate
    rows = _bill_rows(root)
    assert len(rows) == summary["bill_lines"]
    assert sum(Decimal(r["BilledCost"]) for r in rows) == summary["billed_total"]
    assert sum(Decimal(r["EffectiveCost"]) for r in rows) == summary["effective_total"]
    for r in rows:
        for col in ("BilledCost", "EffectiveCost", "ListCost", "ContractedCost"):
            assert len(r[col].split(".")[1]) == 10, (col, r[col])
        assert r["BillingCurrency"] == "USD"
        assert r["BillingPeriodStart"] == "2026-10-01T00:00:00Z"
        assert r["BillingPeriodEnd"] == "2026-11-01T00:00:00Z"
        assert r["InvoiceId"] == "INV-2026-10-0001"
        if r["Tags"]:
            assert isinstance(json.loads(r["Tags"]), dict)
        if r["ResourceType"] == "instance":
            assert Decimal(r["EffectiveCost"]) == Decimal(r["BilledCost"]) * Decimal("0.88")
            assert r["BilledCost"] in ("98.3200000000", "32.7726000000")
            assert json.loads(r["Tags"]).keys() == {"cluster"}
    categories = [r["ChargeCategory"] for r in rows]
    assert categories.count("Tax") == 1 and categories.count("Credit") == 1
    credit = next(r for r in rows if r["ChargeCategory"] == "Credit")
    assert Decimal(credit["BilledCost"]) < 0 and credit["ChargeFrequency"] == "One-Time"
    support = [r for r in rows if r["ServiceName"] == "AWS Support (Business)"]
    assert len(support) == 1 and support[0]["ChargeFrequency"] == "Recurring"
    services = {r["ServiceCategory"] for r in rows}
    assert {"Compute", "Storage", "Networking", "Management and Governance"} <= services
    storage_tags = {bool(r["Tags"]) for r in rows if r["ServiceCategory"] == "Storage"}
    assert storage_tags == {True, False}


def test_focus_csv_reads_in_duckdb_with_exact_header(moderate) -> None:
    duckdb = pytest.importorskip("duckdb")
    root, summary, _ = moderate
    assert list(FOCUS_COLUMNS) == EXPECTED_HEADER
    path = next((root / "billing" / "focus").glob("*/*.csv"))
    con = duckdb.connect()
    src = f"read_csv('{path}', header=true, all_varchar=true)"
    cur = con.execute(f"select * from {src} limit 0")
    assert [d[0] for d in cur.description] == EXPECTED_HEADER
    cur.fetchall()
    ((n, total),) = con.execute(
        f"select count(*), sum(BilledCost::decimal(38, 10)) from {src}"
    ).fetchall()
    assert n == summary["bill_lines"]
    assert total == summary["billed_total"]
    tags = con.execute(
        f"select distinct json_extract_string(Tags, '$.cluster') from {src} "
        "where ResourceType = 'instance' order by 1"
    ).fetchall()
    assert [t[0] for t in tags] == ["gpu-east", "gpu-west"]
    con.close()


def test_untagged_fraction_and_label_mix(moderate) -> None:
    root, summary, _ = moderate
    labels_by_uid: dict[str, dict[str, str]] = {}
    for _, labels, _ in _series(root, "kube", "kube_pod_labels"):
        labels_by_uid[labels["uid"]] = labels
    assert len(labels_by_uid) == summary["pods"]
    untagged = [lb for lb in labels_by_uid.values() if "label_project_id" not in lb]
    assert len(untagged) == summary["untagged_pods"]
    assert 0.4 <= len(untagged) / len(labels_by_uid) <= 0.6
    # some untagged pods still carry team and/or user labels, some carry nothing
    assert any("label_team_id" in lb or "label_user_id" in lb for lb in untagged)
    assert any("label_team_id" not in lb and "label_user_id" not in lb for lb in untagged)
    tagged = [lb for lb in labels_by_uid.values() if "label_project_id" in lb]
    assert all("label_team_id" in lb and "label_user_id" in lb for lb in tagged)
    with (root / "reference" / "org_mapping.csv").open(newline="") as f:
        org = list(csv.DictReader(f))
    assert list(org[0]) == ["project_id", "project_name", "team_id", "team_name", "cost_center"]
    known = {r["project_id"] for r in org}
    unknown = [lb for lb in tagged if lb["label_project_id"] not in known]
    assert len(unknown) == summary["typo_pods"]
    assert len(unknown) <= 0.05 * len(labels_by_uid)


def test_untagged_fraction_parameter(tmp_path: Path) -> None:
    s = generate_month(tmp_path, MonthConfig(seed=5, untagged_fraction=0.2, **MODERATE))
    assert 0.15 <= s["untagged_pods"] / s["pods"] <= 0.25


def test_gpu_requests_never_exceed_node_capacity(moderate) -> None:
    root, _, _ = moderate
    capacity: dict[tuple[str, str], int] = {}
    for cluster, labels, values in _series(root, "kube", "kube_node_status_capacity"):
        if labels["resource"] == "nvidia_com_gpu":
            assert labels["unit"] == "integer"
            capacity[(cluster, labels["node"])] = int(values[0][1])
    used: dict[tuple[str, str, int], int] = defaultdict(int)
    for cluster, labels, values in _series(root, "kube", "kube_pod_container_resource_requests"):
        if labels["resource"] == "nvidia_com_gpu":
            for ts, v in values:
                used[(cluster, labels["node"], ts)] += int(v)
    assert used
    for (cluster, node, _), n in used.items():
        assert n <= capacity[(cluster, node)]
    # and the fleet is genuinely busy at times
    assert max(used.values()) == 8


def test_no_gpu_on_two_pods_at_once_and_dcgm_matches_kube(moderate) -> None:
    root, _, _ = moderate
    owner: dict[tuple[str, int], str] = {}
    dcgm_pod_samples: set[tuple[str, str, str, str, int]] = set()
    for cluster, labels, values in _series(root, "dcgm", "DCGM_FI_DEV_GPU_UTIL"):
        if "pod" not in labels:
            continue
        key = f"{cluster}/{labels['namespace']}/{labels['pod']}"
        for ts, _ in values:
            prev = owner.setdefault((labels["UUID"], ts), key)
            assert prev == key, (labels["UUID"], ts, prev, key)
            dcgm_pod_samples.add(
                (cluster, labels["namespace"], labels["pod"], _hostname(labels), ts)
            )
    kube_pod_samples: set[tuple[str, str, str, str, int]] = set()
    gpu_pods: set[str] = set()
    for _, labels, _ in _series(root, "kube", "kube_pod_container_resource_requests"):
        if labels["resource"] == "nvidia_com_gpu":
            gpu_pods.add(labels["uid"])
    for cluster, labels, values in _series(root, "kube", "kube_pod_info"):
        if labels["uid"] in gpu_pods:
            for ts, _ in values:
                kube_pod_samples.add(
                    (cluster, labels["namespace"], labels["pod"], labels["node"], ts)
                )
    assert dcgm_pod_samples
    # DCGM only misses the telemetry gap; it never invents a pod kube does not know about
    assert dcgm_pod_samples <= kube_pod_samples


def test_telemetry_gap_exists(moderate) -> None:
    root, summary, _ = moderate
    gap = summary["telemetry_gap"]
    start = int(datetime.fromisoformat(gap["start"].replace("Z", "+00:00")).timestamp())
    end = int(datetime.fromisoformat(gap["end"].replace("Z", "+00:00")).timestamp())
    dcgm_ts: set[int] = set()
    for cluster, labels, values in _series(root, "dcgm", "DCGM_FI_DEV_GPU_UTIL"):
        if cluster == gap["cluster"] and _hostname(labels) == gap["node"]:
            dcgm_ts |= {ts for ts, _ in values}
    kube_ts: set[int] = set()
    for cluster, labels, values in _series(root, "kube", "kube_node_info"):
        if cluster == gap["cluster"] and labels["node"] == gap["node"]:
            kube_ts |= {ts for ts, _ in values}
    missing = kube_ts - dcgm_ts
    assert missing and all(start <= ts < end for ts in missing)
    assert len(missing) == 3600 // MODERATE["step_seconds"]


def test_pod_lifecycle_metrics(moderate) -> None:
    root, _, _ = moderate
    step = MODERATE["step_seconds"]
    window_end = int(datetime(2026, 10, 4, tzinfo=UTC).timestamp())
    seen: dict[str, list[int]] = defaultdict(list)
    for _, labels, values in _series(root, "kube", "kube_pod_info"):
        seen[labels["uid"]].extend(ts for ts, _ in values)
        assert labels["created_by_kind"] in {"PyTorchJob", "Job", "StatefulSet", "ReplicaSet"}
    start_time: dict[str, int] = {}
    for _, labels, values in _series(root, "kube", "kube_pod_start_time"):
        assert len({v for _, v in values}) == 1
        start_time[labels["uid"]] = int(values[0][1])
    completion: dict[str, int] = {}
    for _, labels, values in _series(root, "kube", "kube_pod_completion_time"):
        assert values == [[int(values[0][1]), values[0][1]]]
        completion[labels["uid"]] = int(values[0][1])
    assert seen.keys() == start_time.keys()
    assert completion and completion.keys() <= seen.keys()
    for uid, ts in seen.items():
        ts.sort()
        assert ts[0] == start_time[uid]
        assert ts == list(range(ts[0], ts[-1] + step, step))  # contiguous
        if uid in completion:
            assert completion[uid] == ts[-1] + step
        else:
            assert ts[-1] + step == window_end
    images = [lb for _, lb, _ in _series(root, "kube", "kube_pod_container_info")]
    assert all(lb["image_id"].startswith("docker-pullable://") for lb in images)
    assert all(lb["container_id"].startswith("containerd://") for lb in images)


def test_month_boundary_writes_one_file_per_month(month_boundary) -> None:
    root, summary = month_boundary
    assert summary["months"] == ["2026-10", "2026-11"]
    files = sorted((root / "billing" / "focus").glob("*/*.csv"))
    assert [p.parent.name for p in files] == ["2026-10", "2026-11"]
    total = Decimal(0)
    for path in files:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        month = path.parent.name
        assert {r["InvoiceId"] for r in rows} == {f"INV-{month}-0001"}
        assert sum(r["ChargeCategory"] == "Credit" for r in rows) == 1
        assert sum(r["ChargeCategory"] == "Tax" for r in rows) == 1
        for r in rows:
            if r["ResourceType"] == "instance":
                assert r["ChargePeriodStart"].startswith(month)
        total += sum(Decimal(r["BilledCost"]) for r in rows)
    assert total == summary["billed_total"]
    nov = next(p for p in files if p.parent.name == "2026-11")
    with nov.open(newline="") as f:
        row = next(csv.DictReader(f))
    assert row["BillingPeriodStart"] == "2026-11-01T00:00:00Z"
    assert row["BillingPeriodEnd"] == "2026-12-01T00:00:00Z"


@pytest.mark.parametrize(
    "kwargs", [{"step_seconds": 7}, {"days": 0}, {"clusters": 3, "nodes": 2}, {"start": "x"}]
)
def test_rejects_bad_arguments(tmp_path: Path, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        generate_month(tmp_path, MonthConfig(**(TINY | kwargs)))


# ------------------------------------------------------------------------------ hard mode

HARD = {"nodes": 6, "days": 6, "step_seconds": 1800, "clusters": 3, "hard": True}
HARD_FLEET = HARD | {"slurm_nodes": 0, "shared_gpus": False}


@pytest.fixture(scope="module")
def hard_month(tmp_path_factory) -> tuple[Path, dict, list[dict[str, str]]]:
    """A hard month on three clusters (one per namespace layout) with its truth."""
    out = tmp_path_factory.mktemp("hard")
    summary = generate_month(
        out / "landing", MonthConfig(seed=5, **HARD_FLEET), truth_csv=out / "truth.csv"
    )
    with (out / "truth.csv").open(encoding="utf-8") as f:
        truth = list(csv.DictReader(f))
    return out / "landing", summary, truth


def _org(root: Path) -> dict[str, str]:
    with (root / "reference" / "org_mapping.csv").open(newline="", encoding="utf-8") as f:
        return {r["project_id"]: r["team_id"] for r in csv.DictReader(f)}


def test_a_dated_org_mapping_dates_the_handover_where_the_truth_has_it(tmp_path: Path) -> None:
    config = MonthConfig(seed=5, **HARD_FLEET, dated_org_mapping=True)
    generate_month(tmp_path / "landing", config, truth_csv=tmp_path / "truth.csv")
    with (tmp_path / "landing" / "reference" / "org_mapping.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    project, new_team = HANDOFF_PROJECT
    dated = [r for r in rows if r["valid_from"] or r["valid_to"]]
    old, new = sorted(dated, key=lambda r: r["valid_from"])
    assert (old["project_id"], new["project_id"], new["team_id"]) == (project, project, new_team)
    assert old["valid_from"] == "" and old["valid_to"] == new["valid_from"] != ""
    assert new["valid_to"] == "" and new["team_name"] != old["team_name"]
    # the truth's first workload of the new team starts on the day the mapping gives it
    with (tmp_path / "truth.csv").open(encoding="utf-8") as f:
        moved = [r for r in csv.DictReader(f) if r["project_id"] == project]
    first = min(r["started_at"] for r in moved if r["team_id"] == new_team)
    assert first[:10] >= new["valid_from"]
    assert all(r["team_id"] != new_team for r in moved if r["started_at"][:10] < new["valid_from"])
    # the undated month writes no date columns
    generate_month(tmp_path / "plain", MonthConfig(seed=5, **HARD_FLEET))
    assert "valid_from" not in (tmp_path / "plain" / "reference" / "org_mapping.csv").read_text()


def _pod_labels(root: Path) -> dict[str, dict[str, str]]:
    return {labels["uid"]: labels for _, labels, _ in _series(root, "kube", "kube_pod_labels")}


def test_hard_month_is_deterministic_and_knobs_leave_the_plain_month_alone(tmp_path: Path) -> None:
    tiny_hard = TINY | {"hard": True, "clusters": 2, "nodes": 2}
    generate_month(tmp_path / "a", MonthConfig(seed=4, **tiny_hard))
    generate_month(tmp_path / "b", MonthConfig(seed=4, **tiny_hard))
    assert _tree_digest(tmp_path / "a") == _tree_digest(tmp_path / "b")
    # the hard mode's knobs are read in hard mode only: the plain month does not move
    knobs = {"never_tagging_teams": 3, "wrong_tag_share": 0.5, "namespace_layouts": ("shared",)}
    knobs |= {"pod_spec_share": 0.0, "born_projects": 2, "handover_share": 1.0}
    knobs |= {"dated_org_mapping": True}
    generate_month(tmp_path / "c", MonthConfig(seed=4, **TINY))
    generate_month(tmp_path / "d", MonthConfig(seed=4, **TINY, **knobs))
    assert _tree_digest(tmp_path / "c") == _tree_digest(tmp_path / "d")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"never_tagging_teams": 5},
        {"wrong_tag_share": 1.5},
        {"pod_spec_share": -0.1},
        {"born_projects": 9},
        {"namespace_layouts": ("team", "per-user")},
        {"namespace_layouts": ()},
    ],
)
def test_rejects_bad_hard_mode_knobs(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        MonthConfig(**(TINY | kwargs))


def test_hard_month_tagging_is_a_habit_of_people_and_teams(hard_month) -> None:
    root, summary, truth = hard_month
    assert len(truth) == summary["pods"]
    untagged = [r for r in truth if r["tag_state"] == "untagged"]
    assert len(untagged) == summary["untagged_pods"]
    # the month's untagged share stays the configured one (0.5)
    assert abs(len(untagged) / len(truth) - 0.5) < 0.02
    # one team never tags: every pod its people (or pipelines) launch is untagged
    (silent,) = summary["never_tagging_teams"]
    theirs = [r for r in truth if r["user_team_id"] == silent]
    assert len(theirs) > 20 and all(r["tag_state"] == "untagged" for r in theirs)
    # the others tag by habit: people differ far more than a coin per pod would make them
    by_person: dict[str, list[bool]] = defaultdict(list)
    for r in truth:
        if r["user_team_id"] != silent and not r["user_id"].startswith("system:"):
            by_person[r["user_id"]].append(r["tag_state"] == "untagged")
    shares = sorted(sum(v) / len(v) for v in by_person.values() if len(v) >= 8)
    assert len(shares) >= 10 and shares[0] < 0.2  # someone nearly always tags
    # a tenth of the others (two of twenty) never tag
    assert len(summary["never_tagging_people"]) == 2
    for person in summary["never_tagging_people"]:
        assert by_person[person] and all(by_person[person])
    # what the labels say agrees with the truth's tag states
    labels = _pod_labels(root)
    assert all("label_project_id" not in labels[r["uid"]] for r in untagged)


def test_hard_month_wrong_tags_name_another_valid_project(hard_month) -> None:
    root, summary, truth = hard_month
    org = _org(root)
    labels = _pod_labels(root)
    wrong = [r for r in truth if r["tag_state"] == "wrong_tag"]
    tagged = [r for r in truth if r["tag_state"] != "untagged"]
    assert len(wrong) == summary["wrong_tag_pods"] == round(0.03 * len(tagged))
    assert wrong
    for r in wrong:
        label = labels[r["uid"]]["label_project_id"]
        assert label in org and label != r["project_id"]
    # a plain tagged pod's label is its true project; a typo'd one names no project at all
    for r in truth:
        if r["tag_state"] == "tagged":
            assert labels[r["uid"]]["label_project_id"] == r["project_id"]
        elif r["tag_state"] == "typo":
            assert labels[r["uid"]]["label_project_id"] not in org


def test_hard_month_hand_overs_and_a_project_born_mid_month(hard_month) -> None:
    from gpucost.synth.reference import HANDOFF_PROJECT

    root, summary, truth = hard_month
    org = _org(root)
    # a project is born mid-month: nothing of it runs before, some of it after
    ((born, born_at),) = summary["born_projects"].items()
    of_born = [r for r in truth if r["project_id"] == born]
    assert of_born and all(r["started_at"] >= born_at for r in of_born)
    assert summary["start"] < born_at < summary["end"]
    # people move: someone who ran other work before moves onto the new project
    movers = {r["user_id"] for r in of_born} & set(summary["people_moved"])
    assert any(
        r["user_id"] in movers and r["started_at"] < born_at and r["project_id"] != born
        for r in truth
    )
    # and people who move to another of their team's projects mid-month: after the move most of
    # their work is on a project that was not their main one before
    moved_main = 0
    for user, at in summary["people_moved"].items():
        before = [r["project_id"] for r in truth if r["user_id"] == user and r["started_at"] < at]
        after = [r["project_id"] for r in truth if r["user_id"] == user and r["started_at"] >= at]
        if len(before) >= 3 and len(after) >= 3:
            main_before = max(sorted(set(before)), key=before.count)
            main_after = max(sorted(set(after)), key=after.count)
            moved_main += main_before != main_after
    assert moved_main >= 2
    # the truth's team is the project's owner at the pod's time: the handed-over project's
    # pods belong to the new team after the hand-over, to the org mapping's before
    project, new_team = HANDOFF_PROJECT
    start = datetime.fromisoformat(summary["start"].replace("Z", "+00:00"))
    handoff = start + (datetime.fromisoformat(summary["end"].replace("Z", "+00:00")) - start) / 2
    handoff_at = handoff.strftime("%Y-%m-%dT%H:%M:%SZ")
    handed = [r for r in truth if r["project_id"] == project]
    assert {r["team_id"] for r in handed} == {org[project], new_team}
    assert all(r["started_at"] >= handoff_at for r in handed if r["team_id"] == new_team)
    assert all(r["team_id"] == org[project] for r in handed if r["started_at"] < handoff_at)
    for r in truth:
        if r["project_id"] != project:
            assert r["team_id"] == org[r["project_id"]]


def test_hard_month_names_images_specs_and_namespaces(hard_month) -> None:
    root, summary, truth = hard_month
    org = _org(root)
    names = [r["pod"] for r in truth]
    for prefix in ("job-", "run-", "exp-", "ft-", "eval-", "jupyter-"):
        assert any(n.startswith(prefix) for n in names), prefix
    # shared base images: one image runs the work of many projects
    project_of = {r["uid"]: r["project_id"] for r in truth}
    projects_by_image: dict[str, set[str]] = defaultdict(set)
    for _, labels, _ in _series(root, "kube", "kube_pod_container_info"):
        projects_by_image[labels["image"].rsplit(":", 1)[0]].add(project_of[labels["uid"]])
    assert max(len(p) for p in projects_by_image.values()) >= 6
    # generic fine-tunes also run the training jobs' base image, not an image named for them
    kind_of = {r["uid"]: r["kind"] for r in truth}
    assert any(
        kind_of[labels["uid"]] == "finetune"
        and labels["image"].startswith("nvcr.io/nvidia/pytorch")
        for _, labels, _ in _series(root, "kube", "kube_pod_container_info")
    )
    # pod specs for the first two clusters of three only
    clusters = [c["name"] for c in summary["clusters"]]
    assert summary["pod_spec_clusters"] == clusters[:2]
    landed = sorted(p.name for p in (root / "inventory" / "kube").iterdir())
    assert landed == sorted(clusters[:2])
    # namespaces: per team on the first cluster, per project on the second, shared on the third
    assert summary["namespace_layouts"] == dict(
        zip(clusters, ("team", "project", "shared"), strict=True)
    )
    namespaces = defaultdict(set)
    for r in truth:
        namespaces[r["cluster"]].add(r["namespace"])
    assert namespaces[clusters[0]] <= {f"team-{t}" for t in set(org.values())}
    assert namespaces[clusters[1]] <= set(org) and len(namespaces[clusters[1]]) >= 5
    assert namespaces[clusters[2]] == {"batch", "default"}
    # most work there runs in its project's namespace; some side work in the person's main one
    second = [r for r in truth if r["cluster"] == clusters[1]]
    drifted = [r for r in second if r["namespace"] != r["project_id"]]
    assert 0.02 < len(drifted) / len(second) < 0.2
