"""Telemetry as real tools write it, every file shape, Slurm as sites dump it, no silent loss.

One landing zone, ONE dbt build, carrying at once:
- a small generated month (bills, DCGM, kube-state-metrics, Slurm) whose DCGM files of its second day are
  0-byte files, as a failed `curl > file` leaves them (issue 19: that day's money moved between teams
  without a word);
- the real EKS dcgm-exporter files in ../shared/data/usage/dcgm_exporter_eks_h100/ (instant-query vectors
  and the exporter's own exposition text), where 15 of 16 GPUs carry the scrape target's own
  pod=nvidia-dcgm-exporter-* labels;
- a query_range file labelled as the Prometheus Operator writes it under honorLabels: false (exported_pod
  / exported_namespace / exported_container beside the exporter's pod / namespace), with a pod_uid;
- OpenMetrics text from dcgm-exporter run in Docker (a container id as Hostname);
- one of each bad telemetry shape: empty, truncated JSON, a `status: error` response, an unsupported
  resultType, an empty result, an unknown extension, exposition text without samples or unparseable, a
  truncated gzip, a JSON array;
- kube_pod_labels without label_* keys (kube-state-metrics without --metric-labels-allowlist);
- the real XDMoD `sacct --parsable2 --noheader` log (4,285 jobs), a `sacct --json` file in Slurm 21.08's
  and 23.02's shapes, and a truncated one.
"""

from __future__ import annotations

import calendar
import gzip
import json
import shutil
from pathlib import Path

import pytest

from gpucost.commands.gate import evaluate_telemetry, telemetry_gate
from gpucost.engines.prom_text import file_time, parse_metrics_text
from tests.python.conftest import PROJECT_DIR, SHARED_DATA, Warehouse, run_dbt
from tests.python.landing_zones import two_day_month

pytestmark = pytest.mark.warehouse

EKS = SHARED_DATA / "usage" / "dcgm_exporter_eks_h100"
XDMOD = SHARED_DATA / "usage" / "slurm" / "xdmod_phillips_sacct_parsable2_noheader.log"
EXPOSITION_TIME = "20260310T120000Z"
EXPOSITION_EPOCH = calendar.timegm((2026, 3, 10, 12, 0, 0, 0, 0, 0))

OPERATOR_LABELS = {
    "__name__": "DCGM_FI_DEV_GPU_UTIL",
    "Hostname": "ip-10-0-5-5.ec2.internal",
    "UUID": "GPU-op-1",
    "gpu": "0",
    "modelName": "NVIDIA H100 80GB HBM3",
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-x7k2p",
    "container": "nvidia-dcgm-exporter",
    "job": "nvidia-dcgm-exporter",
    "service": "nvidia-dcgm-exporter",
    "instance": "10.0.5.17:9400",
    "exported_namespace": "team-nlp",
    "exported_pod": "train-llm-0",
    "exported_container": "trainer",
    "pod_uid": "6c1f3f5e-0b8e-4c7c-9d55-0a7e7d1f2b11",
}
KSM_OPERATOR_LABELS = {
    "__name__": "kube_pod_info",
    "namespace": "monitoring",
    "pod": "kube-state-metrics-6d9f7",
    "container": "kube-state-metrics",
    "job": "kube-state-metrics",
    "exported_namespace": "team-nlp",
    "exported_pod": "train-llm-0",
    "uid": OPERATOR_LABELS["pod_uid"],
    "node": "ip-10-0-5-5.ec2.internal",
}
DOCKER_OPENMETRICS = (
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-docker-1",Hostname="3f4e5d6c7b8a",'
    'instance="gpu-node-9:9400"} 42 1790000000\n'
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-docker-1",Hostname="3f4e5d6c7b8a",'
    'instance="gpu-node-9:9400"} 43 1790000060\n'
    'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-docker-2",Hostname="0123456789ab"} 7 1790000060\n'
    "# EOF\n"
)
SACCT_JSON = {
    "meta": {"Slurm": {"release": "21.08.8-2"}},
    "errors": [],
    "jobs": [
        {  # Slurm 21.08: plain numbers
            "account": "nlp",
            "array": {"job_id": 0, "task_id": None},
            "cluster": "west",
            "job_id": 501,
            "name": "train",
            "nodes": "gpu[01-02]",
            "partition": "gpu",
            "user": "alice",
            "state": {"current": "COMPLETED", "reason": "None"},
            "time": {"elapsed": 3600, "submit": 1790000000, "start": 1790000100, "end": 1790003700},
            "tres": {
                "allocated": [
                    {"type": "cpu", "name": None, "id": 1, "count": 16},
                    {"type": "mem", "name": None, "id": 2, "count": 65536},
                    {"type": "node", "name": None, "id": 4, "count": 2},
                    {"type": "gres", "name": "gpu", "id": 1001, "count": 4},
                ]
            },
            "working_directory": "/home/alice",
            "submit_line": "sbatch train.sh",
        },
        {  # Slurm 23.02+: {"set", "number"} numbers, state.current a list
            "account": "vision",
            "array": {"job_id": 600, "task_id": {"set": True, "infinite": False, "number": 3}},
            "cluster": "west",
            "job_id": 603,
            "name": "sweep",
            "nodes": "gpu03",
            "partition": "gpu",
            "association": {"user": "bob"},
            "state": {"current": ["RUNNING"], "reason": "None"},
            "time": {
                "elapsed": {"set": True, "number": 60},
                "submit": {"set": True, "number": 1790000000},
                "start": {"set": True, "number": 1790000200},
                "end": {"set": True, "number": 0},
            },
            "tres": {"allocated": [{"type": "gres", "name": "gpu:h100", "id": 1002, "count": 1}]},
        },
    ],
}

# file (relative to the landing) -> the reason rpt_quarantine must give it (a prefix)
BAD_FILES = {
    "metrics/dcgm/bad/empty.json": "empty file (0 bytes)",
    "metrics/dcgm/bad/truncated.json": "unparseable JSON (truncated, or not JSON)",
    "metrics/dcgm/bad/error.json": "Prometheus response status error (bad_data: invalid parameter",
    "metrics/dcgm/bad/scalar.json": "unsupported resultType scalar (expected matrix or vector)",
    "metrics/dcgm/bad/no_series.json": "no series in the response",
    "metrics/dcgm/bad/array.json": "not a Prometheus API response (a JSON array)",
    "metrics/dcgm/bad/odd_second_series.json": "not a Prometheus API response (1 series whose metric",
    "metrics/dcgm/bad/notes.csv": "unknown telemetry file type",
    "metrics/dcgm/bad/comments_only.prom": "no samples in the exposition text file",
    "metrics/dcgm/bad/broken.prom": "unparseable exposition text:",
    "metrics/dcgm/bad/truncated.json.gz": "not a readable file: incomplete gzip stream",
    "metrics/kube/gpu-east/empty/kube_pod_info.json": "empty file (0 bytes)",
    "scheduler/slurm/west/sacct-truncated.json": "unparseable sacct --json file",
    "scheduler/slurm/west/sacct-2026-10-01.txt.gz": "not UTF-8 text",
}


def _land(root: Path) -> tuple[Path, dict]:
    landing = root / "landing"
    summary = two_day_month(landing)
    # a day of 0-byte DCGM files: the second day of the Kubernetes cluster
    lost_day = landing / "metrics" / "dcgm" / "gpu-east" / "2026-10-02"
    for path in lost_day.glob("*.json"):
        path.write_bytes(b"")
    # the real EKS files; the exposition text's samples take the time in its name
    eks = landing / "metrics" / "dcgm" / "eks-h100"
    eks.mkdir(parents=True)
    for path in EKS.glob("*.json"):
        shutil.copyfile(path, eks / path.name)
    shutil.copyfile(
        EKS / "dcgm_exporter_metrics_endpoint_sampled.prom",
        eks / f"metrics-{EXPOSITION_TIME}.prom",
    )
    operator = landing / "metrics" / "dcgm" / "operator"
    operator.mkdir(parents=True)
    (operator / "DCGM_FI_DEV_GPU_UTIL.json").write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [
                        {
                            "metric": OPERATOR_LABELS,
                            "values": [[1790000000, "55"], [1790000060, "56"]],
                        }
                    ],
                },
            }
        )
    )
    # kube-state-metrics scraped the same way: its series' own pod / namespace are exported_*
    (landing / "metrics" / "kube" / "operator").mkdir(parents=True)
    (landing / "metrics" / "kube" / "operator" / "kube_pod_info.json").write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [{"metric": KSM_OPERATOR_LABELS, "values": [[1789990000, "1"]]}],
                },
            }
        )
    )
    docker = landing / "metrics" / "dcgm" / "docker"
    docker.mkdir(parents=True)
    (docker / "dcgm.om").write_text(DOCKER_OPENMETRICS)
    # one of each bad shape
    real_vector = (EKS / "DCGM_FI_DEV_GPU_UTIL.instant_query.json").read_bytes()
    bad = {
        "metrics/dcgm/bad/empty.json": b"",
        "metrics/dcgm/bad/truncated.json": real_vector[:3000],
        "metrics/dcgm/bad/error.json": b'{"status":"error","errorType":"bad_data",'
        b'"error":"invalid parameter \\"query\\""}',
        "metrics/dcgm/bad/scalar.json": b'{"status":"success","data":{"resultType":"scalar",'
        b'"result":[1790000000,"1"]}}',
        "metrics/dcgm/bad/no_series.json": b'{"status":"success","data":{"resultType":"matrix",'
        b'"result":[]}}',
        "metrics/dcgm/bad/array.json": b"[1, 2, 3]",
        # the first series is fine, the second's values are not a list (read_json would stop the build)
        "metrics/dcgm/bad/odd_second_series.json": b'{"status":"success","data":{"resultType":"matrix",'
        b'"result":[{"metric":{"Hostname":"n1","UUID":"GPU-1"},"values":[[1790000000,"1"]]},'
        b'{"metric":{"Hostname":"n1","UUID":"GPU-2"},"values":"abc"}]}}',
        "metrics/dcgm/bad/notes.csv": b"a,b\n1,2\n",
        "metrics/dcgm/bad/comments_only.prom": b"# HELP x y\n# TYPE x gauge\n",
        "metrics/dcgm/bad/broken.prom": b'DCGM_FI_DEV_GPU_UTIL{gpu="0" 5\n',
        "metrics/dcgm/bad/truncated.json.gz": gzip.compress(real_vector)[:200],
        "metrics/kube/gpu-east/empty/kube_pod_info.json": b"",
        "scheduler/slurm/west/sacct-truncated.json": json.dumps(SACCT_JSON).encode()[:500],
        "scheduler/slurm/west/sacct-2026-10-01.txt.gz": gzip.compress(XDMOD.read_bytes()[:2000]),
    }
    for relative, content in bad.items():
        path = landing / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    # kube-state-metrics without --metric-labels-allowlist: kube_pod_labels without label_* keys
    kube = landing / "metrics" / "kube" / "eks-h100"
    kube.mkdir(parents=True)
    (kube / "kube_pod_labels.json").write_text(
        json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "vector",
                    "result": [
                        {
                            "metric": {
                                "__name__": "kube_pod_labels",
                                "namespace": "dynamo-workload",
                                "pod": "vllm-agg-0-vllmdecodeworker-s65j5",
                                "uid": "0d9e4c1a-6f7b-4b7e-8c1d-2f3a4b5c6d7e",
                            },
                            "value": [1773114089.184, "1"],
                        }
                    ],
                },
            }
        )
    )
    slurm = landing / "scheduler" / "slurm"
    (slurm / "phillips").mkdir(parents=True)
    shutil.copyfile(XDMOD, slurm / "phillips" / XDMOD.name)
    (slurm / "west" / "sacct.json").write_text(json.dumps(SACCT_JSON, indent=1))
    # symlinks out of the landing zone: a good-looking query response and a dump with a secret, never read
    outside = root / "outside"
    outside.mkdir()
    shutil.copyfile(EKS / "DCGM_FI_DEV_GPU_UTIL.instant_query.json", outside / "util.json")
    (outside / "secret.log").write_text("SECRET-TOKEN-5|password=hunter5\n", encoding="utf-8")
    (eks / "linked_util.json").symlink_to(outside / "util.json")
    (slurm / "phillips" / "linked.log").symlink_to(outside / "secret.log")
    return landing, summary


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Warehouse, str]:
    root = tmp_path_factory.mktemp("real_telemetry")
    landing, _ = _land(root)
    work = root / "work"
    work.mkdir()
    warehouse = Warehouse(landing=landing, path=work / "gpucost.duckdb", work=work)
    result = run_dbt(landing, warehouse.path, work, "build")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    return warehouse, result.stdout


def _relative(warehouse: Warehouse, path: str) -> str:
    return str(Path(path).relative_to(warehouse.landing))


def test_each_bad_telemetry_shape_is_quarantined_with_its_reason(built):
    warehouse, stdout = built
    rows = warehouse.sql(
        "select source_file, quarantine_reason from marts.rpt_quarantine where metric_name = '(file)'"
    )
    reasons = {_relative(warehouse, file): reason for file, reason in rows}
    for relative, reason in BAD_FILES.items():
        assert relative in reasons, f"{relative} not in rpt_quarantine"
        assert reasons[relative].startswith(reason), (relative, reasons[relative])
    # the day of 0-byte DCGM files: every file, one row each
    lost = {r for r in reasons if r.startswith("metrics/dcgm/gpu-east/2026-10-02/")}
    assert len(lost) == 4 and {reasons[r] for r in lost} == {"empty file (0 bytes)"}
    assert "QUARANTINE:" in stdout  # the build warns


def test_nothing_landed_is_ignored_silently(built):
    """Every landed telemetry and Slurm file yields rows, or is in rpt_quarantine."""
    warehouse, _ = built
    landed = {
        str(path.relative_to(warehouse.landing))
        for folder in ("metrics", "scheduler")
        for path in (warehouse.landing / folder).rglob("*")
        if path.is_file()
    }
    used = warehouse.sql(
        "select source_file from staging.base_dcgm__series where sample_count > 0"
        " union select source_file from staging.base_kube__series where sample_count > 0"
        " union select source_file from staging.base_serving__series where sample_count > 0"
        " union select source_file from staging.stg_slurm__job_records where quarantine_reason is null"
        " union select source_file from marts.rpt_quarantine"
    )
    assert landed - {_relative(warehouse, file) for (file,) in used} == set()


def test_the_exporter_pod_is_never_a_workload_and_the_real_workload_is_found(built):
    warehouse, _ = built
    pods = warehouse.sql(
        "select distinct namespace, pod, container from staging.stg_dcgm__gpu_samples"
        " where cluster_id = 'eks-h100' order by all"
    )
    assert pods == [
        ("dynamo-workload", "vllm-agg-0-vllmdecodeworker-s65j5", "main"),
        (None, None, None),
    ]
    # 16 GPUs on 2 nodes, 4 instant-query files of one sample per series, plus the exposition text
    ((gpus, nodes, instants, exposition),) = warehouse.sql(
        "select count(distinct gpu_uuid), count(distinct node_name),"
        " count(distinct gpu_uuid) filter (where sampled_epoch between 1773114089 and 1773114090),"
        f" count(*) filter (where sampled_epoch = {EXPOSITION_EPOCH})"
        " from staging.stg_dcgm__gpu_samples where cluster_id = 'eks-h100'"
    )
    assert (gpus, nodes, instants, exposition) == (16, 2, 16, 8)
    (exporter_workloads,) = warehouse.sql(
        "select count(*) from intermediate.int_gpu_usage_hourly"
        " where workload_id like '%dcgm-exporter%' or workload_id like '%gpu-operator%'"
    )[0]
    assert exporter_workloads == 0


def test_exported_labels_win_and_pod_uid_names_the_incarnation(built):
    warehouse, _ = built
    rows = warehouse.sql(
        "select distinct namespace, pod, container, pod_key from staging.stg_dcgm__gpu_samples"
        " where cluster_id = 'operator'"
    )
    uid = OPERATOR_LABELS["pod_uid"]
    assert rows == [("team-nlp", "train-llm-0", "trainer", f"operator/team-nlp/train-llm-0/{uid}")]
    (workloads,) = warehouse.sql(
        "select list(distinct workload_id) from intermediate.int_gpu_usage_hourly"
        " where cluster_id = 'operator'"
    )[0]
    assert workloads == [f"operator/team-nlp/train-llm-0/{uid}"]


def test_kube_state_metrics_exported_labels_name_the_pod(built):
    warehouse, _ = built
    rows = warehouse.sql(
        "select workload_id, namespace, pod, node_name from staging.stg_kube__pods"
        " where cluster_id = 'operator'"
    )
    uid = OPERATOR_LABELS["pod_uid"]
    assert rows == [
        (
            f"operator/team-nlp/train-llm-0/{uid}",
            "team-nlp",
            "train-llm-0",
            "ip-10-0-5-5.ec2.internal",
        )
    ]


def test_a_container_id_hostname_is_matched_through_instance_or_quarantined(built):
    warehouse, _ = built
    nodes = warehouse.sql(
        "select distinct node_name, gpu_uuid from staging.stg_dcgm__gpu_samples"
        " where cluster_id = 'docker'"
    )
    assert nodes == [("gpu-node-9", "GPU-docker-1")]
    (reason,) = warehouse.sql(
        "select quarantine_reason from marts.rpt_quarantine where source_file like '%/docker/dcgm.om'"
    )[0]
    assert reason.startswith("Hostname 0123456789ab is a container id")


def test_kube_state_metrics_without_the_allowlist_warns_with_the_fix(built):
    _, stdout = built
    assert "kube_pod_labels of cluster eks-h100" in stdout
    assert "--metric-labels-allowlist" in stdout
    assert "kube_pod_labels of cluster gpu-east" not in stdout  # labels there


def test_the_xdmod_headerless_log_builds_every_allocation(built):
    warehouse, _ = built
    ((allocations, quarantined, gpu_jobs),) = warehouse.sql(
        "select count(distinct allocation_id), count(quarantine_reason),"
        " count(*) filter (where gpu_count = 2)"
        " from staging.stg_slurm__job_records where cluster_id = 'phillips'"
    )
    assert (allocations, quarantined, gpu_jobs) == (4285, 0, 2)
    first = XDMOD.read_text().splitlines()[0].split("|")
    (record,) = warehouse.sql(
        "select job_id_text, user_name, account, partition_name, node_list"
        " from staging.stg_slurm__job_records where source_row_number = 1 and cluster_id = 'phillips'"
    )
    assert record == (first[0], first[8], first[5], first[3], first[24])


def test_sacct_json_jobs_are_records(built):
    warehouse, _ = built
    rows = warehouse.sql(
        "select allocation_id, user_name, account, gpu_count, gpu_model, memory_bytes,"
        " cast(started_at as varchar), cast(ended_at as varchar), job_state, node_list,"
        " elapsed_seconds, work_dir, submit_line"
        " from staging.stg_slurm__job_records where cluster_id = 'west' and quarantine_reason is null"
        " order by 1"
    )
    assert rows == [
        ("west/501", "alice", "nlp", 4, None, 64 * 1024**3, "2026-09-21 14:15:00",
         "2026-09-21 15:15:00", "COMPLETED", "gpu[01-02]", 3600, "/home/alice", "sbatch train.sh"),
        ("west/600_3", "bob", "vision", 1, "h100", None, "2026-09-21 14:16:40", None, "RUNNING",
         "gpu03", 60, None, None),
    ]  # fmt: skip
    (nodes,) = warehouse.sql(
        "select list(node_name order by node_name) from intermediate.int_slurm_allocation_nodes"
        " where allocation_id = 'west/501'"
    )[0]
    assert nodes == ["gpu01", "gpu02"]


def test_a_billed_node_day_without_telemetry_is_a_gap(built):
    warehouse, _ = built
    rows = warehouse.sql(
        "select cluster_id, cast(gap_date as varchar), uncounted_seconds from marts.rpt_telemetry_gaps"
        " where gap_reason = 'billed_node_day_without_telemetry'"
    )
    nodes = warehouse.sql(
        "select distinct node_name from staging.stg_dcgm__gpu_samples where cluster_id = 'gpu-east'"
    )
    assert {(r[0], r[1]) for r in rows} == {("gpu-east", "2026-10-02")}
    assert len(rows) == len(nodes) and all(r[2] == 86400 for r in rows)


def test_the_gate_fails_on_lost_telemetry_unless_allowed(built):
    warehouse, _ = built
    strict = telemetry_gate(warehouse.path, PROJECT_DIR, allow_flag=False)
    assert len(strict.failures) == 2
    lost_files = len(BAD_FILES) + 4 + len(OUTSIDE_LINKS)
    assert strict.failures[0].startswith(f"{lost_files} landed telemetry file(s)")
    assert "billed node-day(s) have no telemetry" in strict.failures[1]
    assert telemetry_gate(warehouse.path, PROJECT_DIR, allow_flag=True).ok


def test_evaluate_telemetry_is_pure_and_passes_clean_telemetry():
    assert evaluate_telemetry([], []).ok
    files = [("metrics/dcgm", "/l/metrics/dcgm/a.json", "empty file (0 bytes)")]
    days = [("c", "n1", "2026-10-02", 86400)]
    assert len(evaluate_telemetry(files, []).failures) == 1
    assert len(evaluate_telemetry([], days).failures) == 1
    relaxed = evaluate_telemetry(files, days, allow_telemetry_loss=True)
    assert relaxed.ok and any("(allowed)" in line for line in relaxed.report)


def test_exposition_text_and_openmetrics_become_series():
    text = (EKS / "dcgm_exporter_metrics_endpoint_sampled.prom").read_text()
    response = parse_metrics_text(text, f"x-{EXPOSITION_TIME}.prom", 1.0)
    series = response["data"]["result"]
    assert response["status"] == "success" and len(series) == 30
    assert {s["values"][0][0] for s in series} == {float(EXPOSITION_EPOCH)}
    assert series[0]["metric"]["__name__"] == "DCGM_FI_DEV_GPU_TEMP"
    assert series[0]["metric"]["pod_uid"] == ""
    # OpenMetrics (promtool tsdb dump-openmetrics): samples with timestamps, one series
    om = parse_metrics_text(DOCKER_OPENMETRICS, "dcgm.om", None)["data"]["result"]
    assert [s["values"] for s in om] == [
        [[1790000000.0, "42.0"], [1790000060.0, "43.0"]],
        [[1790000060.0, "7.0"]],
    ]
    # without a timestamp the file's modification time, when its name has no time
    assert file_time("a/metrics.prom", 1234.5) == 1234.5
    assert parse_metrics_text("x 1\n", "m.prom", None)["status"] == "error"


OUTSIDE_LINKS = {
    "metrics/dcgm/eks-h100/linked_util.json": "metrics/dcgm",
    "scheduler/slurm/phillips/linked.log": "scheduler/slurm",
}


def test_symlinks_out_of_the_landing_zone_are_refused_and_never_read(built):
    """A telemetry or Slurm file that is a symlink to a target outside the landing zone is never
    opened: one rpt_quarantine row each (the gate's telemetry check counts it), no series, no
    record, and nothing of its content in any message."""
    warehouse, stdout = built
    rows = warehouse.sql(
        "select source_file, source_kind, quarantine_reason, example_value from marts.rpt_quarantine"
        " where quarantine_reason like 'a symbolic link%'"
    )
    refused = {
        _relative(warehouse, file): (kind, reason, example) for file, kind, reason, example in rows
    }
    assert set(refused) == set(OUTSIDE_LINKS)
    for relative, kind in OUTSIDE_LINKS.items():
        assert refused[relative] == (
            kind,
            "a symbolic link whose target is outside the landing zone: refused, not read",
            "<file>",
        )
    read = warehouse.sql(
        "select source_file from staging.base_dcgm__series"
        " union all select source_file from staging.stg_slurm__job_records"
    )
    assert not {_relative(warehouse, file) for (file,) in read} & set(OUTSIDE_LINKS)
    assert "SECRET" not in stdout and "hunter" not in stdout
