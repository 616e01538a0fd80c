"""The generator's Slurm cluster: a ParallelCluster-style HPC queue next to the Kubernetes fleet.

What it writes, in the formats the tools emit:

* ``scheduler/slurm/<cluster>/sacct-<YYYY-MM-DD>.txt``: ``sacct --parsable2`` dumps (header
  line, ``|`` separated) of the jobs that started that day, each allocation with its ``.batch``
  and ``.extern`` steps and, for multi-node jobs, a numbered step. Array jobs print
  ``<job>_<task>`` with their own JobIDRaw; NodeList in hostlist syntax
  (``gpu-st-p4d24xlarge-[1-2]``); AllocTRES with ``gres/gpu``, ``cpu``, ``mem`` and ``node``;
  WorkDir and SubmitLine. A job still running at the end of the window prints End ``Unknown``
  and state RUNNING.
* ``metrics/dcgm/<cluster>/<YYYY-MM-DD>/<metric>.json``: the DCGM exporter's series for the
  queue's nodes (Prometheus range-query JSON, like the Kubernetes clusters'), labelled
  ``Hostname`` and, on a GPU a job holds, the exporter's ``hpc_job`` label (its JobIDRaw)
  instead of a pod.
* The nodes are EC2 instances: one FOCUS line per node-hour (``ResourceId`` the instance,
  ``ResourceName`` the host name Slurm and DCGM know), written by the generator's bill.

Accounts are project ids for most jobs; the rest use a team's name or ``default`` (not a project),
so their money goes through rules or the learned attribution like untagged pods.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SACCT_HEADER = (
    "JobID|JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|Elapsed|ElapsedRaw|AllocTRES|"
    "NodeList|State|WorkDir|SubmitLine|Comment"
)
PARTITION = "gpu"
SECONDS_PER_DAY = 86400


@dataclass(slots=True)
class SlurmNode:
    name: str
    ip: str
    instance_id: str
    zone: str
    itype: Any  # generator.InstanceType
    join: int
    gpu_labels: list[dict[str, str]]
    free_at: list[int] = field(default_factory=list)


@dataclass(slots=True)
class SlurmJob:
    job_id: str  # as sacct prints it: 4101 or 4100_3
    raw_id: int
    name: str
    user: str
    account: str
    project: str  # the truth
    submit: int
    start: int
    end: int  # may be past the window: RUNNING
    nodes: list[int]
    gpu_idx: dict[int, tuple[int, ...]]
    gpus_per_node: int
    cpus_per_node: int
    mem_gb_per_node: int
    busy: float
    workdir: str
    submit_line: str


@dataclass(slots=True)
class SlurmCluster:
    name: str
    region: str
    region_name: str
    sub_account_id: str
    sub_account_name: str
    nodes: list[SlurmNode]
    jobs: list[SlurmJob] = field(default_factory=list)


def hostlist(names: list[str]) -> str:
    """Slurm's compressed hostlist: ``p-1, p-2, p-4`` -> ``p-[1-2,4]``; one host stays as it is."""
    if len(names) == 1:
        return names[0]
    prefix = names[0].rstrip("0123456789")
    numbers = sorted(int(n[len(prefix) :]) for n in names)
    ranges: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        ranges.append(f"{start}-{prev}" if prev > start else str(start))
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(ranges)}]"


def build_cluster(
    rng: random.Random, itype: Any, nodes: int, t0: int, gpus_per_node: int, hexstr: Any
) -> SlurmCluster:
    """A ParallelCluster queue ``gpu`` of ``nodes`` static nodes of ``itype`` in us-east-1."""
    out: list[SlurmNode] = []
    for i in range(1, nodes + 1):
        name = f"gpu-st-{itype.name.replace('.', '')}-{i}"
        ip = f"10.9.{rng.randrange(0, 64)}.{rng.randrange(1, 255)}"
        labels = []
        for g in range(gpus_per_node):
            h = hexstr(rng, 32)
            labels.append(
                {
                    "DCGM_FI_DRIVER_VERSION": "550.90.07",
                    "Hostname": name,
                    "UUID": f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}",
                    "device": f"nvidia{g}",
                    "gpu": str(g),
                    "instance": f"{ip}:9400",
                    "job": "dcgm-exporter",
                    "modelName": itype.gpu_model,
                    "pci_bus_id": itype.pci_bus_ids[g],
                }
            )
        out.append(
            SlurmNode(
                name=name,
                ip=ip,
                instance_id="i-0" + hexstr(rng, 16),
                zone="us-east-1" + "abcd"[rng.randrange(4)],
                itype=itype,
                join=t0,
                gpu_labels=labels,
                free_at=[t0] * gpus_per_node,
            )
        )
    return SlurmCluster(
        name="hpc",
        region="us-east-1",
        region_name="US East (N. Virginia)",
        sub_account_id=str(rng.randrange(10**11, 10**12)),
        sub_account_name="acme-ml-hpc",
        nodes=out,
    )


def schedule_jobs(
    rng: random.Random,
    cluster: SlurmCluster,
    user_team: dict[str, str],
    team_projects: dict[str, list[str]],
    t0: int,
    window_end: int,
    step: int,
) -> None:
    """Submit about six jobs a day (multi-node training, array sweeps, fine-tunes) and place
    them first-fit on the nodes' GPUs; jobs that cannot start inside the window stay pending."""
    users = sorted(u for u in user_team if not u.startswith("u"))
    next_id = 4100
    submits: list[tuple[int, str]] = []
    for day in range((window_end - t0) // SECONDS_PER_DAY):
        for _ in range(rng.randint(4, 8)):
            at = t0 + day * SECONDS_PER_DAY + rng.randrange(0, SECONDS_PER_DAY // step) * step
            submits.append((at, rng.choice(("train", "train", "sweep", "finetune"))))
    submits.sort()
    gpn = len(cluster.nodes[0].free_at)
    for submit, kind in submits:
        user = rng.choice(users)
        team = user_team[user]
        project = rng.choice(sorted(team_projects[team]))
        r = rng.random()
        account = project if r < 0.7 else (team if r < 0.85 else "default")
        tasks: list[tuple[str, int]] = []
        if kind == "train":
            n_nodes = min(len(cluster.nodes), rng.choice((1, 2, 2)))
            per_node, duration = gpn, rng.randrange(4, 20) * 3600
            cpus, mem = 96 if gpn == 8 else 12 * gpn, 1000
            name = f"{project}-pretrain" if rng.random() < 0.6 else "train"
            tasks.append((str(next_id), next_id))
            next_id += 1
        elif kind == "sweep":
            n_nodes, per_node, duration = 1, rng.choice((1, 2)), rng.randrange(1, 4) * 3600
            cpus, mem = 12 * per_node, 120 * per_node
            name = f"hpo-{project}" if rng.random() < 0.5 else "sweep"
            array = next_id
            for task in range(rng.randint(3, 6)):
                tasks.append((f"{array}_{task}", array + task + 1))
            next_id = array + len(tasks) + 1
        else:
            n_nodes, per_node, duration = 1, rng.choice((2, 4)), rng.randrange(2, 8) * 3600
            cpus, mem = 12 * per_node, 120 * per_node
            name = f"ft-{project}"
            tasks.append((str(next_id), next_id))
            next_id += 1
        for job_id, raw in tasks:
            # first fit: the nodes whose per_node-th free GPU frees up earliest
            ready = sorted(
                (sorted(node.free_at)[per_node - 1], i) for i, node in enumerate(cluster.nodes)
            )[:n_nodes]
            start = max([submit, *(at for at, _ in ready)])
            start = -(-start // step) * step
            if start >= window_end:
                continue
            end = start + duration
            chosen = sorted(i for _, i in ready)
            gpu_idx: dict[int, tuple[int, ...]] = {}
            for i in chosen:
                node = cluster.nodes[i]
                free = sorted(range(gpn), key=lambda g, node=node: (node.free_at[g], g))
                picked = tuple(sorted(g for g in free if node.free_at[g] <= start)[:per_node])
                for g in picked:
                    node.free_at[g] = end
                gpu_idx[i] = picked
            workdir = f"/fsx/{team}/{user}/{project if account == project else 'runs'}"
            script = {"train": "train.sbatch", "sweep": "sweep.sbatch", "finetune": "ft.sbatch"}
            array_opt = f" --array=0-{len(tasks) - 1}" if kind == "sweep" else ""
            cluster.jobs.append(
                SlurmJob(
                    job_id=job_id,
                    raw_id=raw,
                    name=name,
                    user=user,
                    account=account,
                    project=project,
                    submit=submit,
                    start=start,
                    end=end,
                    nodes=chosen,
                    gpu_idx=gpu_idx,
                    gpus_per_node=per_node,
                    cpus_per_node=cpus,
                    mem_gb_per_node=mem,
                    busy=rng.uniform(55, 95),
                    workdir=workdir,
                    submit_line=(
                        f"sbatch -A {account} -p {PARTITION} -N {len(chosen)} "
                        f"--gres=gpu:{per_node}{array_opt} {script[kind]}"
                    ),
                )
            )


def _stamp(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: int) -> str:
    days, rest = divmod(seconds, SECONDS_PER_DAY)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return (f"{days}-" if days else "") + f"{h:02d}:{m:02d}:{s:02d}"


def write_sacct_day(out_dir: Path, cluster: SlurmCluster, day_start: int, window_end: int) -> int:
    """Write the dump of the jobs that started this day; returns the records written."""
    day_end = day_start + SECONDS_PER_DAY
    jobs = [j for j in cluster.jobs if day_start <= j.start < day_end]
    if not jobs:
        return 0
    lines = [SACCT_HEADER]
    for j in jobs:
        running = j.end > window_end
        end = window_end if running else j.end
        elapsed = end - j.start
        hosts = hostlist([cluster.nodes[i].name for i in j.nodes])
        n = len(j.nodes)
        gpu_model = "a100" if "A100" in cluster.nodes[0].itype.gpu_model else "h100"
        tres = (
            f"billing={j.cpus_per_node * n},cpu={j.cpus_per_node * n},"
            f"gres/gpu:{gpu_model}={j.gpus_per_node * n},gres/gpu={j.gpus_per_node * n},"
            f"mem={j.mem_gb_per_node * n}G,node={n}"
        )
        end_s = "Unknown" if running else _stamp(end)
        state = "RUNNING" if running else "COMPLETED"
        common = [_stamp(j.submit), _stamp(j.start), end_s, _elapsed(elapsed), str(elapsed)]
        lines.append(
            "|".join(
                [j.job_id, str(j.raw_id), j.name, j.user, j.account, PARTITION, *common, tres,
                 hosts, state, j.workdir, j.submit_line, ""]
            )
        )  # fmt: skip
        first = cluster.nodes[j.nodes[0]].name
        batch_tres = f"cpu={j.cpus_per_node},mem={j.mem_gb_per_node}G,node=1"
        for step_name, step_tres, step_hosts in (
            ("batch", batch_tres, first),
            ("extern", tres, hosts),
            *((("0", tres, hosts),) if n > 1 else ()),
        ):
            lines.append(
                "|".join(
                    [f"{j.job_id}.{step_name}", f"{j.raw_id}.{step_name}",
                     step_name if step_name in ("batch", "extern") else "torchrun",
                     "", j.account, "", *common, step_tres, step_hosts, state, "", "", ""]
                )
            )  # fmt: skip
    path = out_dir / "scheduler" / "slurm" / cluster.name / f"sacct-{_stamp(day_start)[:10]}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines) - 1


def dcgm_day(
    cluster: SlurmCluster, day_start: int, step: int, window_end: int, rng: random.Random
) -> tuple[dict[str, list], int]:
    """The exporter's series for one day: per GPU, a series per job holding it (``hpc_job``) and
    one for the time nobody held it. Values as ready JSON fragments for the generator's writer."""
    metrics = (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    )
    out: dict[str, list] = {m: [] for m in metrics}
    day_end = min(day_start + SECONDS_PER_DAY, window_end)
    ts = list(range(day_start, day_end, step))
    samples = 0
    for i, node in enumerate(cluster.nodes):
        for g, labels in enumerate(node.gpu_labels):
            holders = [j for j in cluster.jobs if i in j.gpu_idx and g in j.gpu_idx[i]]
            series: dict[str, list[list[str]]] = {}
            for t in ts:
                job = next((j for j in holders if j.start <= t < j.end), None)
                key = str(job.raw_id) if job else ""
                util = (
                    max(0, min(100, int(job.busy + (rng.random() - 0.5) * 10)))
                    if job
                    else (0 if rng.random() < 0.9 else 1)
                )
                fb = int(node.itype.fb_total_mib * 0.8) if job else 3
                power = (
                    node.itype.idle_watts
                    + util * (node.itype.max_watts - node.itype.idle_watts) / 100
                )
                values = (
                    f'[{t},"{util}"]',
                    f'[{t},"{fb}"]',
                    f'[{t},"{power:.3f}"]',
                    f'[{t},"{util / 100 * 0.93:.6f}"]',
                )
                entry = series.setdefault(key, [[], [], [], []])
                for lst, v in zip(entry, values, strict=True):
                    lst.append(v)
                samples += len(metrics)
            for key, per_metric in series.items():
                extra = {"hpc_job": key} if key else {}
                for metric, values in zip(metrics, per_metric, strict=True):
                    labels_out = dict(sorted({"__name__": metric, **labels, **extra}.items()))
                    out[metric].append((labels_out, [",".join(values)]))
    return out, samples
