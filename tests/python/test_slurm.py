"""Slurm accounting dumps (`sacct --parsable2`): records, steps, array jobs and hostlists.

The dumps below are written the way sacct prints them: a header line, `|` between fields, no quoting,
times in the controller's local zone, `Unknown` for times that have not happened, `None assigned` for a
pending job's nodes, and a free-text SubmitLine that may itself hold a `|`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.python.conftest import Warehouse, run_dbt

pytestmark = pytest.mark.warehouse

HEADER = (
    "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|ElapsedRaw|"
    "AllocTRES|NodeList|State|WorkDir|SubmitLine|Comment"
)
DUMP = [
    HEADER,
    # a two-node training job, its batch / extern / numbered steps
    "1001|1001|train-llm|alice|NLP|gpu|2026-10-01T00:00:00|2026-10-01T00:05:00|2026-10-01T02:05:00|02:00:00|7200|"
    "billing=64,cpu=64,gres/gpu:a100=8,gres/gpu=8,mem=512G,node=2|gpu[01-02]|COMPLETED|/home/alice/llm|sbatch -N2 train.sh|",
    "1001.batch|1001.batch|batch||nlp||2026-10-01T00:05:00|2026-10-01T00:05:00|2026-10-01T02:05:00|02:00:00|7200|"
    "cpu=32,gres/gpu:a100=4,gres/gpu=4,mem=256G,node=1|gpu01|COMPLETED|||",
    "1001.extern|1001.extern|extern||nlp||2026-10-01T00:05:00|2026-10-01T00:05:00|2026-10-01T02:05:00|02:00:00|7200|"
    "billing=64,cpu=64,gres/gpu:a100=8,gres/gpu=8,mem=512G,node=2|gpu[01-02]|COMPLETED|||",
    "1001.0|1001.0|python||nlp||2026-10-01T00:05:10|2026-10-01T00:05:10|2026-10-01T02:04:00|01:58:50|7130|"
    "cpu=64,gres/gpu:a100=8,gres/gpu=8,mem=512G,node=2|gpu[01-02]|COMPLETED|||",
    # array tasks: 2000_7 across a hostlist with a gap and padding; pending tasks hold no node
    "2000_7|2007|sweep|bob|vision|gpu|2026-10-01T01:00:00|2026-10-01T01:00:05|2026-10-02T03:00:05|1-02:00:00|93600|"
    "billing=24,cpu=24,gres/gpu:h100=3,gres/gpu=3,mem=96G,node=3|gpu[09-10,12]|CANCELLED by 1002|/scratch/bob|sbatch --array=1-9 sweep.sh|lr=3e-4",
    "2000_7.batch|2007.batch|batch||vision||2026-10-01T01:00:05|2026-10-01T01:00:05|2026-10-02T03:00:05|1-02:00:00|93600|"
    "cpu=8,gres/gpu=1,mem=32G,node=1|gpu09|CANCELLED|||",
    "2000_[8-9%2]|2000|sweep|bob|vision|gpu|2026-10-01T01:00:00|Unknown|Unknown|00:00:00|0||None assigned|PENDING|/scratch/bob|sbatch --array=1-9 sweep.sh|",
    # several node groups, one without padding, and a running job (End Unknown)
    "3000|3000|etl|carol|rec|cpu|2026-10-01T03:00:00|2026-10-01T03:00:00|Unknown|01:00:00|3600|"
    "billing=8,cpu=8,mem=16000M,node=5|gpu[03-04],cpu[9-11]|RUNNING|||",
    # a SubmitLine holding a pipe: more fields than the header; kept and quarantined
    "4000|4000|shell|dave|rec|gpu|2026-10-01T04:00:00|2026-10-01T04:00:00|2026-10-01T05:00:00|01:00:00|3600|"
    "billing=1,cpu=1,gres/gpu=1,mem=4G,node=1|gpu05|COMPLETED|/home/dave|srun bash -c 'nvidia-smi | tee log'|",
]
# another cluster's dump, without ElapsedRaw and with a Cluster column
DUMP_OTHER = [
    "JobID|Cluster|User|Account|Start|End|Elapsed|AllocTRES|NodeList|State",
    "77|hpc-west|erin|nlp|2026-10-01T00:00:00|2026-10-02T02:00:00|1-02:00:00|gres/gpu=2,node=1|node7|COMPLETED",
]


def _landing(root: Path) -> Path:
    landing = root / "landing"
    east = landing / "scheduler" / "slurm" / "hpc-east" / "2026-10-01"
    east.mkdir(parents=True)
    (east / "sacct.txt").write_text("\n".join(DUMP) + "\n", encoding="utf-8")
    other = landing / "scheduler" / "slurm" / "whatever"
    other.mkdir(parents=True)
    (other / "sacct-west.psv").write_text("\r\n".join(DUMP_OTHER) + "\r\n", encoding="utf-8")
    return landing


def _build(root: Path, *select: str) -> Warehouse:
    landing = _landing(root)
    work = root / "work"
    work.mkdir()
    warehouse = Warehouse(landing=landing, path=work / "gpucost.duckdb", work=work)
    result = run_dbt(landing, warehouse.path, work, "build", "--select", *select)
    assert result.returncode == 0, result.stdout[-5000:]
    return warehouse


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> Warehouse:
    """The dumps built up to the Slurm allocations and the workload features (one build for the
    module): only the data tests all of whose parents are built (a test of int_workload_features
    also reads a mart; every test of the allocations' parents is built)."""
    return _build(
        tmp_path_factory.mktemp("slurm"),
        "+int_slurm_allocation_nodes",
        "+int_workload_features",
        "--indirect-selection",
        "buildable",
    )


def test_every_line_is_a_record(slurm):
    (count,) = slurm.sql("select count(*) from staging.stg_slurm__job_records")[0]
    assert count == len(DUMP) - 1 + len(DUMP_OTHER) - 1


def test_steps_are_kept_but_only_allocations_hold_nodes(slurm):
    kinds = dict(
        slurm.sql(
            "select record_kind, count(*) from staging.stg_slurm__job_records"
            " where allocation_id = 'hpc-east/1001' group by 1"
        )
    )
    assert kinds == {"allocation": 1, "batch": 1, "extern": 1, "step": 1}
    rows = slurm.sql(
        "select node_id, gpus_on_node from intermediate.int_slurm_allocation_nodes"
        " where allocation_id = 'hpc-east/1001' order by 1"
    )
    assert rows == [("hpc-east/gpu01", 4), ("hpc-east/gpu02", 4)]


def test_array_task_across_a_hostlist(slurm):
    record = slurm.sql(
        "select base_job_id, array_task_id, job_id_raw, gpu_count, gpu_model, memory_bytes, elapsed_seconds,"
        " job_state, cast(started_at as varchar), cast(ended_at as varchar)"
        " from staging.stg_slurm__job_records where allocation_id = 'hpc-east/2000_7' and is_allocation"
    )
    assert record == [
        ("2000", "7", "2007", 3, "h100", 96 * 1024**3, 93600, "CANCELLED",
         "2026-10-01 01:00:05", "2026-10-02 03:00:05"),
    ]  # fmt: skip
    nodes = slurm.sql(
        "select node_name, gpus_on_node, allocation_node_count from intermediate.int_slurm_allocation_nodes"
        " where allocation_id = 'hpc-east/2000_7' order by 1"
    )
    assert nodes == [("gpu09", 1, 3), ("gpu10", 1, 3), ("gpu12", 1, 3)]


def test_pending_array_range_holds_no_node(slurm):
    record = slurm.sql(
        "select array_task_id, job_state, started_at from staging.stg_slurm__job_records"
        " where allocation_id = 'hpc-east/2000_[8-9%2]'"
    )
    assert record == [(None, "PENDING", None)]
    (count,) = slurm.sql(
        "select count(*) from intermediate.int_slurm_allocation_nodes where allocation_id like 'hpc-east/2000_[%'"
    )[0]
    assert count == 0


def test_several_node_groups_unpadded_range_and_running_job(slurm):
    (names,) = slurm.sql(
        "select list(node_name order by node_name) from intermediate.int_slurm_allocation_nodes"
        " where allocation_id = 'hpc-east/3000'"
    )[0]
    assert names == ["cpu10", "cpu11", "cpu9", "gpu03", "gpu04"]
    record = slurm.sql(
        "select ended_at, memory_bytes, gpu_count from staging.stg_slurm__job_records where allocation_id = 'hpc-east/3000'"
    )
    assert record == [(None, 16000 * 1024**2, None)]


def test_a_pipe_in_free_text_quarantines_the_line_not_the_build(slurm):
    rows = slurm.sql(
        "select quarantine_reason, source_row_number, raw_line like '%nvidia-smi | tee%'"
        " from staging.stg_slurm__job_records where allocation_id = 'hpc-east/4000'"
    )
    assert rows == [("field_count_mismatch: 18 fields under a header of 17", 10, True)]
    (count,) = slurm.sql(
        "select count(*) from intermediate.int_slurm_allocation_nodes where allocation_id = 'hpc-east/4000'"
    )[0]
    assert count == 0


def test_cluster_column_and_elapsed_without_elapsed_raw(slurm):
    rows = slurm.sql(
        "select allocation_id, account, elapsed_seconds, gpu_count from staging.stg_slurm__job_records"
        " where user_name = 'erin'"
    )
    assert rows == [("hpc-west/77", "nlp", 93600, 2)]
    (account,) = slurm.sql(
        "select account from staging.stg_slurm__job_records where allocation_id = 'hpc-east/1001' and is_allocation"
    )[0]
    assert account == "nlp"  # NLP in the dump: accounts compare lower-case


def test_controller_time_zone_is_converted_to_utc(tmp_path):
    # only the job records, where the conversion is made
    warehouse = _build(
        tmp_path, "+stg_slurm__job_records", "--vars", "{gpucost_slurm_timezone: Europe/Berlin}"
    )
    (started,) = warehouse.sql(
        "select cast(started_at as varchar) from staging.stg_slurm__job_records"
        " where allocation_id = 'hpc-east/1001' and is_allocation"
    )[0]
    assert started == "2026-09-30 22:05:00"  # 00:05 CEST (UTC+2)


def test_submit_line_and_work_dir_are_attribution_signals(slurm):
    """A Slurm job is a row of int_workload_features like a pod: its SubmitLine is the launch line,
    its WorkDir the working directory, its JobName the owner name (gpucost.core.attribution reads them)."""
    warehouse = slurm
    rows = warehouse.sql(
        "select command_line, working_dir, created_by_kind, created_by_name, partition_name,"
        " known_project_id from intermediate.int_workload_features"
        " where workload_id = 'hpc-east/slurm/2000_7'"
    )
    assert rows == [
        ("sbatch --array=1-9 sweep.sh", "/scratch/bob", "SlurmJob", "sweep", "gpu", "vision")
    ]
