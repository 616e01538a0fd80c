"""The generated month carries every usage source, in the tools' formats, and reconciles to the cent.

The session's generated month (4 GPU nodes in 2 Kubernetes clusters, 3 days, 600 s samples) also has a
Slurm queue of 2 nodes, an H100 node split into MIG instances and time-sliced replicas, and CPU-only pods
on the GPU nodes (gpucost.synth.generator, gpucost.synth.generator_slurm).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucost.synth.generator_slurm import SACCT_HEADER, hostlist

pytestmark = pytest.mark.warehouse


def test_hostlist_compresses_like_slurm():
    assert hostlist(["gpu-st-p4d24xlarge-1"]) == "gpu-st-p4d24xlarge-1"
    assert hostlist(["n1", "n2", "n4", "n5", "n7"]) == "n[1-2,4-5,7]"


def test_sacct_dumps_in_the_landing_are_parsable2(generated_month):
    landing, summary = generated_month
    dumps = sorted((landing / "scheduler" / "slurm" / "hpc").glob("sacct-*.txt"))
    assert dumps, "no sacct dumps"
    lines = [line for path in dumps for line in path.read_text().splitlines()]
    assert {line for line in lines if line.startswith("JobID|")} == {SACCT_HEADER}
    width = SACCT_HEADER.count("|")
    assert all(line.count("|") == width for line in lines)
    assert any(".batch|" in line for line in lines) and any(".extern|" in line for line in lines)
    assert summary["slurm"]["jobs"] > 0 and summary["slurm"]["array_tasks"] > 0


def test_every_source_is_staged(generated_warehouse):
    (kinds,) = generated_warehouse.sql(
        "select list(distinct record_kind order by record_kind) from staging.stg_slurm__job_records"
    )[0]
    assert kinds == ["allocation", "batch", "extern", "step"]
    ((arrays, multi_node),) = generated_warehouse.sql(
        "select count(distinct workload_id) filter (where job_id_text like '%\\_%' escape '\\'),"
        " count(distinct workload_id) filter (where allocation_node_count > 1)"
        " from intermediate.int_slurm_allocation_nodes"
    )
    assert arrays > 0 and multi_node > 0
    resources = dict(
        generated_warehouse.sql(
            "select gpu_resource, count(distinct workload_id) from staging.stg_kube__pod_gpu_requests"
            " group by 1"
        )
    )
    assert resources["nvidia_com_mig_1g_10gb"] == 9  # 7 on GPU 0, 2 on GPU 1
    assert resources["nvidia_com_mig_3g_40gb"] == resources["nvidia_com_mig_2g_20gb"] == 1
    assert resources["nvidia_com_gpu_shared"] == 6  # 4 + 2 replicas
    (mig_slots,) = generated_warehouse.sql(
        "select count(distinct gpu_uuid || gpu_instance_id) from staging.stg_dcgm__gpu_samples"
        " where gpu_instance_id is not null"
    )[0]
    assert mig_slots == 11


def test_the_month_reconciles_and_each_source_carries_money(generated_warehouse):
    ((reconciled, residual),) = generated_warehouse.sql(
        "select bool_and(is_reconciled), max(abs(billed_residual)) from marts.rpt_reconciliation"
    )
    assert (reconciled, residual) == (True, 0)
    money = dict(
        generated_warehouse.sql(
            """
            select source, sum(billed_cost) from (
                select billed_cost, case
                    when workload_id like '%/slurm/%' then 'slurm'
                    when workload_id like '%feature-etl%' then 'cpu_only'
                    when workload_id in (
                        select workload_id from staging.stg_kube__pod_gpu_requests
                        where gpu_resource like 'nvidia_com_mig%') then 'mig'
                    when workload_id in (
                        select workload_id from staging.stg_kube__pod_gpu_requests
                        where gpu_resource = 'nvidia_com_gpu_shared') then 'time_sliced'
                end as source
                from marts.fct_cost_allocation
            ) where source is not null group by 1
            """
        )
    )
    assert set(money) == {"slurm", "cpu_only", "mig", "time_sliced"}
    assert all(amount > 0 for amount in money.values())
    # CPU-only pods pay only from the CPU and memory parts of the nodes they ran on
    (components,) = generated_warehouse.sql(
        "select list(distinct cost_component order by cost_component) from marts.fct_cost_allocation"
        " where workload_id like '%feature-etl%'"
    )[0]
    assert components == ["compute_cpu", "compute_memory"]
    # the shared node's time-sliced replicas request one GPU between four, so its idle GPUs stay idle
    ((idle, usage),) = generated_warehouse.sql(
        "select sum(billed_cost) filter (where allocation_kind = 'idle'),"
        " sum(billed_cost) filter (where allocation_kind <> 'idle')"
        " from marts.fct_cost_allocation where cost_component = 'compute_gpu' and node_name in ("
        "  select node_name from staging.stg_dcgm__gpu_samples where gpu_instance_id is not null)"
    )
    assert idle > Decimal(0) and usage > Decimal(0)


def test_the_month_with_every_source_is_byte_identical_for_a_seed(tmp_path):
    import hashlib

    from gpucost.synth import MonthConfig, generate_month

    def digest(root):
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    tiny = {"nodes": 2, "days": 1, "step_seconds": 900, "clusters": 1}
    a = digest(generate_month(tmp_path / "a", MonthConfig(seed=3, **tiny)) and tmp_path / "a")
    b = digest(generate_month(tmp_path / "b", MonthConfig(seed=3, **tiny)) and tmp_path / "b")
    assert a == b
    assert any(name.startswith("scheduler/slurm/") for name in a)


def test_a_gap_beyond_the_bound_is_flagged_not_counted(generated_month, generated_warehouse):
    """The generated month's exporter outage (one node, one hour) is listed per GPU in
    rpt_telemetry_gaps: the sample before it stands for one step (600 s), the hour is not GPU time."""
    _, summary = generated_month
    gap = summary["telemetry_gap"]
    rows = generated_warehouse.sql(
        "select cluster_id, node_name, gap_seconds, counted_seconds, uncounted_seconds,"
        " strftime(first_sample_after_at, '%Y-%m-%dT%H:%M:%SZ'), gap_reason"
        " from marts.rpt_telemetry_gaps"
    )
    assert {(r[0], r[1]) for r in rows} == {(gap["cluster"], gap["node"])}
    assert len(rows) == 8  # every GPU of the node
    assert {r[2:] for r in rows} == {(4200, 600, 3600, gap["end"], "telemetry_gap_beyond_900s")}
