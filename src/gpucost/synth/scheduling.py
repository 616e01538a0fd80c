"""Workloads: pods of each kind (training, fine-tuning, notebooks, eval, inference, ETL), their
arrivals, the scheduler that places them on GPUs, project labels and creator annotations."""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from gpucost.synth.common import (
    align,
    image_digest,
    loguniform,
    poisson,
    random_hex,
    random_suffix,
    random_uuid,
)
from gpucost.synth.fleet import Cluster, Node
from gpucost.synth.reference import (
    CREATOR_DOMAIN,
    CREATOR_SERVICE_ACCOUNTS,
    DATASET_WORDS,
    EVAL_SUITES,
    GIB,
    GPUS_PER_NODE,
    HANDOFF_PROJECT,
    KIND_PRIORITY,
    KIND_SHARE,
    NOTEBOOK_MAX_WAIT,
    PUBLIC_BASE_MODEL,
    SECONDS_PER_DAY,
    SERVING_PROJECTS,
    SHARED_NODE_MIG,
    SHARED_NODE_REPLICAS,
    UNTAG_WEIGHT,
)


@dataclass(slots=True)
class Container:
    name: str
    image: str
    image_id: str
    container_id: str
    cpu: str
    memory: str
    gpus: int
    gpu_resource: str = (
        "nvidia_com_gpu"  # as kube-state-metrics names it: MIG and shared GPUs differ
    )
    # the pod spec (Kubernetes API, not kube-state-metrics): hard mode writes it to inventory/kube
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    working_dir: str = ""


@dataclass(slots=True)
class Pod:
    seq: int
    cluster: int
    kind: str
    name: str
    namespace: str
    uid: str
    user: str
    user_team: str
    project: str
    gpus: int
    arrival: int
    duration: int
    fixed_end: int
    template: str
    created_by_kind: str
    created_by_name: str
    app: str
    containers: list[Container]
    prof: dict[str, Any]
    node: Node | None = None
    gpu_idx: tuple[int, ...] = ()
    start: int = -1
    end: int = -1
    pod_ip: str = ""
    tag_state: str = "tagged"  # tagged | untagged | typo | wrong_tag
    team: str = ""  # the team that owns the project at the pod's arrival (hand-overs!)
    labels: dict[str, str] = field(default_factory=dict)
    volume_claims: list[str] = field(default_factory=list)  # PVCs the pod spec mounts (hard mode)
    creator: str = ""  # who created the workload, stamped by an admission webhook ("" if none)


def _arrival_weight(kind: str, weekday: int, hour: int) -> float:
    workday = weekday < 5
    office = 9 <= hour < 18
    if kind == "notebook":
        if not workday:
            return 0.04 if 10 <= hour < 17 else 0.0
        return 1.0 if 8 <= hour < 17 else 0.0
    if kind == "eval":  # CI-driven evals run around the clock
        return (1.6 if office else 0.7) if workday else 0.5
    if workday:
        if office:
            return 2.2
        return 0.9 if 18 <= hour < 23 else 0.3
    return 0.3


def _week_mean(kind: str) -> float:
    return sum(_arrival_weight(kind, d, h) for d in range(7) for h in range(24)) / 168.0


class PodFactory:
    def __init__(
        self,
        rng: random.Random,
        cluster: Cluster,
        user_team: dict[str, str],
        project_team: dict[str, str],
        step: int,
        *,
        hard: bool = False,
        handoff_at: int = 0,
        spec_seed: str = "",
        generic_share: float = 0.5,
        layout: str = "team",
        drift: float = 0.0,
        born: dict[str, int] | None = None,
        moves: dict[str, tuple[int, str | None, float]] | None = None,
    ) -> None:
        self.rng = rng
        self.cluster = cluster
        self.user_team = user_team
        self.users = list(user_team)
        self.team_projects: dict[str, list[str]] = {}
        for p, t in project_team.items():
            self.team_projects.setdefault(t, []).append(p)
        self.all_projects = list(project_team)
        self.project_team = project_team
        self.step = step
        self.seq = 0
        self.used_names: set[str] = set()
        # hard mode (the attribution benchmark): each user has a fixed mix of two or three projects,
        # CI service accounts without a user, images shared across projects, names that do not say
        # the project, train -> eval pipelines, and one project handed to another team mid-window
        self.hard = hard
        self.handoff_at = handoff_at
        self.generic_share = generic_share
        self.layout = layout  # namespaces per team, per project or shared (MonthConfig)
        self.drift = drift  # per-project layout: side work run in the person's main namespace
        self.born = born or {}  # projects born mid-month: the first second they may run
        self.moves = dict(moves or {})  # people who move onto another project mid-month
        self.user_projects: dict[str, list[tuple[str, float]]] = {}
        self.user_last: dict[str, str] = {}
        if hard:
            for u in self.users:
                own = sorted(set(self.team_projects[self.user_team[u]]) - set(self.born))
                picks = rng.sample(own, min(2, len(own)))
                if rng.random() < 0.5:
                    others = set(self.all_projects) - set(own) - set(self.born)
                    picks.append(rng.choice(sorted(others)))
                weights = sorted((rng.uniform(0.2, 1.0) for _ in picks), reverse=True)
                self.user_projects[u] = list(zip(picks, weights, strict=True))
        # pod specs (hard mode): their own random stream, so the month's pods stay the same
        self.spec_rng = random.Random(spec_seed or f"{cluster.name}/pod-specs")
        self.datasets, self.team_datasets = _build_datasets(project_team)
        self.project_jobs: dict[str, str] = {}  # the latest training / fine-tune job per project

    def _unique(self, make: Callable[[], str]) -> str:
        while True:
            name = make()
            if name not in self.used_names:
                self.used_names.add(name)
                return name

    def owner_team(self, project: str, at: int) -> str:
        """The team that owns ``project`` at ``at``: the org mapping's, but the handed-over
        project's new team after the hand-over (hard mode)."""
        if self.handoff_at and project == HANDOFF_PROJECT[0] and at >= self.handoff_at:
            return HANDOFF_PROJECT[1]
        return self.project_team[project]

    def namespace(self, kind: str, team: str, project: str) -> str:
        """Where the cluster runs a pod: its team's, its project's or a shared namespace."""
        if self.layout == "project":
            return project
        if self.layout == "shared":
            return "batch" if kind in ("training", "finetune", "eval") else "default"
        return f"team-{team}"

    def _move(self, user: str, arrival: int) -> None:
        """Hard mode: a person whose move is due leaves their main project for another one (the
        project born mid-month, or another of their team's), which leads their mix from now on."""
        when, target, pick = self.moves[user]
        if arrival < when:
            return
        del self.moves[user]
        mix = self.user_projects[user]
        if target is None:
            own = sorted(set(self.team_projects[self.user_team[user]]) - {mix[0][0]})
            own = [q for q in own if self.born.get(q, 0) <= arrival] or [mix[0][0]]
            target = own[int(pick * len(own))]
        rest = [(q, w * 0.3) for q, w in mix[1:] if q != target]
        self.user_projects[user] = [(target, 1.0), *rest]
        self.user_last[user] = target

    def _project_for(self, user: str, arrival: int = 0) -> str:
        rng = self.rng
        if self.hard:
            if user in self.moves:
                self._move(user, arrival)
            # people work in streaks: mostly the project of their previous job, sometimes another
            last = self.user_last.get(user)
            if last is not None and rng.random() < 0.8:
                return last
            projects, weights = zip(*self.user_projects[user], strict=True)
            self.user_last[user] = rng.choices(projects, weights)[0]
            return self.user_last[user]
        own = self.team_projects[self.user_team[user]]
        project = rng.choice(own) if rng.random() < 0.85 else rng.choice(self.all_projects)
        if self.born.get(project, 0) > arrival:  # not born yet: one of the team's that runs
            team = self.user_team[user]
            project = min(q for q in self.team_projects[team] if self.born.get(q, 0) <= arrival)
        return project

    def _container(self, name: str, image: str, cpu: str, mem: int, gpus: int) -> Container:
        return Container(
            name=name,
            image=image,
            image_id=image_digest(image),
            container_id="containerd://" + random_hex(self.rng, 64),
            cpu=cpu,
            memory=str(mem),
            gpus=gpus,
        )

    def make(
        self,
        kind: str,
        arrival: int,
        *,
        user: str | None = None,
        project: str | None = None,
        gpus: int | None = None,
        duration: int | None = None,
        fixed_end: int = 0,
        template: str | None = None,
        rs_name: str | None = None,
        reads: str | None = None,
    ) -> Pod:
        rng, step = self.rng, self.step
        user = user or rng.choice(self.users)
        project = project or self._project_for(user, arrival)
        team = self.user_team[user]
        if self.hard and project == HANDOFF_PROJECT[0] and arrival >= self.handoff_at:
            # the project moved to another team: its jobs now come from that team's people
            team = HANDOFF_PROJECT[1]
            user = rng.choice(sorted(u for u, t in self.user_team.items() if t == team))
        namespace = self.namespace(kind, team, project)
        main = self.user_projects.get(user, [(project, 1.0)])[0][0]
        if self.layout == "project" and main != project and rng.random() < self.drift:
            namespace = main  # side work, run where the person usually works
        if self.hard and kind in ("training", "finetune", "eval") and rng.random() < 0.1:
            user = f"system:serviceaccount:{namespace}:ci"  # a pipeline's service account
        # names and images that do not say the project
        vague = self.hard and rng.random() < self.generic_share
        prof: dict[str, Any] = {}
        if kind == "training":
            gpus = gpus or (8 if rng.random() < 0.6 else 4)
            duration = duration or align(loguniform(rng, 6, 72) * 3600, step)
            job = self._unique(lambda: f"{project}-train-{random_hex(rng, 5)}")
            if vague:
                job = self._unique(self._generic_job(("exp", "run", "job")))
            app = "train" if vague else f"{project}-train"
            name, cb_kind, cb_name = f"{job}-0", "PyTorchJob", job
            tag = rng.choice(("24.05-py3", "24.07-py3", "24.09-py3"))
            main = self._container(
                "pytorch", f"nvcr.io/nvidia/pytorch:{tag}", str(gpus * 10), gpus * 100 * GIB, gpus
            )
            prof = {
                "base": rng.uniform(72, 96),
                "noise": rng.uniform(2, 5),
                "ckpt": max(2, round(rng.uniform(1800, 5400) / step)),
                "phase": rng.randrange(1000),
                "dip": rng.uniform(5, 30),
                "fb": rng.uniform(0.80, 0.97),
            }
            containers = [main]
        elif kind == "finetune":
            gpus = gpus or rng.choice((1, 1, 2, 2, 4, 4, 3))
            duration = duration or align(loguniform(rng, 1, 12) * 3600, step)
            job = self._unique(lambda: f"{project}-ft-{random_hex(rng, 5)}")
            if vague:
                job = self._unique(self._generic_job(("ft", "job")))
            name, cb_kind, cb_name = f"{job}-{random_suffix(rng, 5)}", "Job", job
            app = "ft" if vague else f"{project}-ft"
            image = f"ghcr.io/acme/{project}-finetune:0.{rng.randint(3, 9)}.{rng.randint(0, 12)}"
            if vague:
                image = f"ghcr.io/acme/trainer:0.{rng.randint(3, 9)}.{rng.randint(0, 12)}"
                if rng.random() < 0.3:  # the shared base image the training jobs use
                    image = f"nvcr.io/nvidia/pytorch:{rng.choice(('24.05-py3', '24.09-py3'))}"
            main = self._container("trainer", image, str(gpus * 8), gpus * 64 * GIB, gpus)
            prof = {
                "base": rng.uniform(52, 88),
                "noise": rng.uniform(4, 9),
                "ckpt": max(2, round(rng.uniform(1200, 3600) / step)),
                "phase": rng.randrange(1000),
                "dip": rng.uniform(5, 25),
                "fb": rng.uniform(0.45, 0.90),
            }
            containers = [main]
        elif kind == "notebook":
            gpus = 1
            duration = duration or align(rng.uniform(1, 8) * 3600, step)
            name = f"jupyter-{user}-0"
            cb_kind, cb_name, app = "StatefulSet", f"jupyter-{user}", "jupyter"
            image = rng.choice(
                (
                    "quay.io/jupyter/pytorch-notebook:cuda12-python-3.11",
                    "quay.io/jupyter/tensorflow-notebook:cuda-2024-09-16",
                    "nvcr.io/nvidia/pytorch:24.05-py3",
                )
            )
            main = self._container("notebook", image, "4", 32 * GIB, 1)
            prof = {
                "p_on": rng.uniform(0.03, 0.12),
                "p_off": rng.uniform(0.2, 0.5),
                "burst": rng.uniform(35, 95),
                "active": False,
                "fb": rng.uniform(0.05, 0.5),
            }
            containers = [main]
        elif kind == "inference":
            assert gpus is not None and duration is not None and rs_name is not None
            name = self._unique(lambda: f"{rs_name}-{random_suffix(rng, 5)}")
            cb_kind, cb_name, app = "ReplicaSet", rs_name, f"{project}-infer"
            image = rng.choice(
                (
                    f"ghcr.io/acme/{project}-server:1.{rng.randint(2, 6)}.{rng.randint(0, 9)}",
                    "vllm/vllm-openai:v0.5.4",
                    "nvcr.io/nvidia/tritonserver:24.05-py3",
                )
            )
            main = self._container("server", image, str(gpus * 6), gpus * 48 * GIB, gpus)
            side = self._container(
                "istio-proxy", "docker.io/istio/proxyv2:1.22.3", "0.1", 128 * 1024**2, 0
            )
            lo = rng.uniform(18, 32)
            prof = {
                "lo": lo,
                "hi": lo + rng.uniform(15, 30),
                "noise": rng.uniform(2, 6),
                "fb": rng.uniform(0.55, 0.92),
            }
            containers = [main, side]
        elif kind == "eval":
            gpus = gpus or rng.choice((1, 1, 2))
            duration = duration or align(loguniform(rng, 600, 7200), step)
            job = self._unique(lambda: f"{project}-eval-{random_hex(rng, 5)}")
            if self.hard:
                job = self._unique(lambda: f"eval-{random_hex(rng, 5)}")
            name, cb_kind, cb_name, app = (
                f"{job}-{random_suffix(rng, 5)}",
                "Job",
                job,
                "eval-harness",
            )
            image = f"ghcr.io/acme/eval-harness:0.9.{rng.randint(0, 7)}"
            main = self._container("eval", image, str(gpus * 4), gpus * 32 * GIB, gpus)
            prof = {
                "base": rng.uniform(40, 92),
                "noise": rng.uniform(5, 12),
                "ckpt": 0,
                "phase": 0,
                "dip": 0.0,
                "fb": rng.uniform(0.3, 0.8),
            }
            containers = [main]
        else:  # pragma: no cover - programming error
            raise ValueError(kind)
        prof["eff"] = rng.uniform(0.75, 1.0)
        prof["ratio"] = rng.uniform(0.82, 0.98)
        claims: list[str] = []
        if self.hard:
            claims = self._spec(kind, containers[0], project, team, user, cb_name, vague, reads)
        self.seq += 1
        return Pod(
            team=self.owner_team(project, arrival),
            seq=self.seq,
            cluster=self.cluster.idx,
            kind=kind,
            name=name,
            namespace=namespace,
            uid=random_uuid(rng),
            user=user,
            user_team=team,
            project=project,
            gpus=gpus,
            arrival=arrival,
            duration=duration,
            fixed_end=fixed_end,
            template=template or f"{self.cluster.idx}/{self.seq}",
            created_by_kind=cb_kind,
            created_by_name=cb_name,
            app=app,
            containers=containers,
            prof=prof,
            volume_claims=claims,
        )

    def _generic_job(self, styles: tuple[str, ...]) -> Callable[[], str]:
        """A maker of generic job names of one of ``styles``: ``exp-<hex>``, ``ft-<hex>``,
        ``run-<hash>`` or ``job-<n>`` (the name says nothing of the project)."""
        rng = self.rng
        style = rng.choice(styles)
        if style == "run":
            return lambda: f"run-{random_hex(rng, 8)}"
        if style == "job":
            return lambda: f"job-{rng.randrange(100, 100_000)}"
        return lambda: f"{style}-{random_hex(rng, 5)}"

    def _spec(
        self,
        kind: str,
        main: Container,
        project: str,
        team: str,
        user: str,
        job: str,
        vague: bool,
        reads: str | None,
    ) -> list[str]:
        """Fill the main container's command / args / workingDir the way these jobs are launched;
        return the PersistentVolumeClaims the pod mounts. What names the project is partial, as in
        real clusters: a vague job's code lives in its team's monorepo and its config is named after
        the run; it reads one of its project's datasets (opaque names) or a dataset the whole team
        shares; fine-tunes and evaluations read a checkpoint (an earlier job's output, or a public
        base model); a notebook mounts its owner's workspace and, half the time, a dataset cache."""
        rng = self.spec_rng
        own = self.datasets[project]
        dataset = self.team_datasets[team] if rng.random() < 0.3 else rng.choice(own)
        data = f"s3://acme-datasets/{dataset}/"
        output = f"s3://acme-checkpoints/{team}/{job}/"
        repo = f"ml-{team}" if vague else project
        claims: list[str] = []
        if kind == "training":
            config = f"configs/{job}.yaml" if vague else f"configs/{project}/base.yaml"
            main.command = ["torchrun"]
            main.args = [f"--nproc_per_node={main.gpus}", "train.py", "--config", config]
            main.args += ["--data", data, "--output", output]
            main.working_dir = f"/workspace/{repo}"
            self.project_jobs[project] = job
        elif kind == "finetune":
            parent = self.project_jobs.get(project) if rng.random() < 0.6 else None
            base = f"s3://acme-checkpoints/{team}/{parent}/final" if parent else PUBLIC_BASE_MODEL
            main.command = ["python", "finetune.py"]
            main.args = ["--base", base, "--data", data, "--output", output]
            main.working_dir = f"/workspace/{repo}"
            self.project_jobs[project] = job
        elif kind == "eval":
            parent = reads or (self.project_jobs.get(project) if rng.random() < 0.7 else None)
            model = f"s3://acme-checkpoints/{team}/{parent}/final" if parent else PUBLIC_BASE_MODEL
            main.command = ["python", "-m", "eval_harness"]
            main.args = ["--model", model, "--tasks", rng.choice(EVAL_SUITES)]
            main.working_dir = "/opt/eval-harness"
        elif kind == "notebook":
            main.command = ["start-notebook.py"]
            main.args = ["--ServerApp.root_dir=/home/jovyan"]
            main.working_dir = "/home/jovyan"
            claims = [f"ws-{user}"] + ([f"{dataset}-cache"] if rng.random() < 0.5 else [])
        else:  # inference: the server loads whatever the deployment mounted
            main.command = ["python", "-m", "server"]
            main.args = ["--model", "/models/current", "--port", "8000"]
        return claims


def _build_datasets(project_team: dict[str, str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Two opaque dataset names per project (they do not say the project) and one per team that all
    its projects read. Fixed by the project list, like a data catalogue."""
    words = sorted(f"{a}-{b}" for a in DATASET_WORDS[0] for b in DATASET_WORDS[1])
    random.Random("datasets").shuffle(words)
    names = iter(words)
    projects = {p: [next(names), next(names)] for p in sorted(project_team)}
    teams = {t: next(names) for t in sorted(set(project_team.values()))}
    return projects, teams


def cluster_arrivals(
    factory: PodFactory, cluster: Cluster, t0: int, window_end: int, step: int
) -> list[Pod]:
    rng = factory.rng
    capacity = GPUS_PER_NODE * sum(1 for n in cluster.nodes if not n.reserved)
    pods: list[Pod] = []
    # Inference deployments: run the whole window, re-deployed (new ReplicaSet) every few days.
    n_deploy = max(1, round(0.15 * capacity / 3.0))
    serving = list(SERVING_PROJECTS)
    rng.shuffle(serving)
    for d in range(n_deploy):
        project = serving[d % len(serving)]
        team = factory.project_team[project]
        owners = [u for u, t in factory.user_team.items() if t == team]
        user = rng.choice(owners)
        gpus = rng.choice((1, 1, 2))
        replicas = rng.choice((1, 2, 2, 3))
        t, gen = t0, 0
        while t < window_end:
            nxt = t + rng.randint(2, 9) * SECONDS_PER_DAY + rng.randrange(0, 24) * 3600
            rs = f"{project}-infer-{random_suffix(rng, rng.choice((6, 8, 9, 10)))}"
            for _ in range(replicas):
                pods.append(
                    factory.make(
                        "inference",
                        t,
                        user=user,
                        project=project,
                        gpus=gpus,
                        duration=nxt - t,
                        fixed_end=nxt,
                        template=f"{cluster.idx}/deploy{d}/{gen}",
                        rs_name=rs,
                    )
                )
            t, gen = nxt, gen + 1
    # Mean GPU-hours per pod for each kind (matches the distributions in PodFactory.make).
    gpu_hours = {
        "training": 6.4 * (66 / math.log(12)),
        "finetune": 2.43 * (11 / math.log(12)),
        "notebook": 4.5,
        "eval": 1.33 * ((7200 - 600) / 3600 / math.log(12)),
    }
    rates = {k: KIND_SHARE[k] * capacity / gpu_hours[k] / _week_mean(k) for k in KIND_SHARE}
    # A backlog of training jobs submitted before the window so day one is not an empty cluster.
    for _ in range(round(0.45 * capacity / 6.4)):
        pods.append(factory.make("training", t0))
    slots = 3600 // step
    tz = timedelta(hours=cluster.tz_hours)
    for h in range((window_end - t0) // 3600):
        t_h = t0 + h * 3600
        local = datetime.fromtimestamp(t_h, UTC) + tz
        for kind in ("training", "finetune", "notebook", "eval"):
            lam = rates[kind] * _arrival_weight(kind, local.weekday(), local.hour)
            for _ in range(poisson(rng, lam)):
                pod = factory.make(kind, t_h + rng.randrange(slots) * step)
                pods.append(pod)
                if factory.hard and kind == "training" and rng.random() < 0.3:
                    # a pipeline: the same user evaluates the run when it ends
                    pods.append(
                        factory.make(
                            "eval",
                            pod.arrival + pod.duration,
                            user=pod.user if not pod.user.startswith("system:") else None,
                            project=pod.project,
                            reads=pod.created_by_name,
                        )
                    )
    pods.sort(key=lambda p: (p.arrival, p.seq))
    return pods


def schedule(
    cluster: Cluster, arrivals: list[Pod], t0: int, window_end: int, step: int, pod_ip_base: int
) -> list[Pod]:
    """Event-driven bin-packing scheduler; returns the pods that started, in start order."""
    nodes = [n for n in cluster.nodes if not n.reserved]
    joins = sorted({n.join for n in nodes if n.join > t0})
    running: list[tuple[int, int, Pod]] = []
    queue: list[Pod] = []
    started: list[Pod] = []
    notebook_busy: dict[str, int] = {}
    ai = ji = 0
    ip_counter = pod_ip_base
    while True:
        cands = []
        if ai < len(arrivals):
            cands.append(arrivals[ai].arrival)
        if running:
            cands.append(running[0][0])
        if ji < len(joins):
            cands.append(joins[ji])
        if not cands:
            break
        t = min(cands)
        if t >= window_end:
            break
        while running and running[0][0] <= t:
            _, _, done = heapq.heappop(running)
            assert done.node is not None
            for g in done.gpu_idx:
                done.node.free[g] = True
            done.node.free_count += len(done.gpu_idx)
        while ai < len(arrivals) and arrivals[ai].arrival <= t:
            queue.append(arrivals[ai])
            ai += 1
        while ji < len(joins) and joins[ji] <= t:
            ji += 1
        if not queue:
            continue
        queue.sort(key=lambda p: (KIND_PRIORITY[p.kind], p.arrival, p.seq))
        waiting: list[Pod] = []
        for pod in queue:
            if pod.kind == "notebook" and (
                t - pod.arrival > NOTEBOOK_MAX_WAIT or notebook_busy.get(pod.user, 0) > t
            ):
                continue  # user gave up, or already has a running server
            best: Node | None = None
            for node in nodes:
                if (
                    node.join <= t
                    and node.free_count >= pod.gpus
                    and (best is None or node.free_count < best.free_count)
                ):
                    best = node
            if best is None:
                waiting.append(pod)
                continue
            idx = tuple(i for i, f in enumerate(best.free) if f)[: pod.gpus]
            for g in idx:
                best.free[g] = False
            best.free_count -= pod.gpus
            pod.node, pod.gpu_idx, pod.start = best, idx, t
            pod.end = max(pod.fixed_end, t + step) if pod.fixed_end else t + pod.duration
            n = ip_counter
            ip_counter += 1
            pod.pod_ip = f"10.{cluster.idx + 1}.{64 + (n // 254) % 192}.{1 + n % 254}"
            if pod.kind == "notebook":
                notebook_busy[pod.user] = pod.end
            heapq.heappush(running, (pod.end, pod.seq, pod))
            started.append(pod)
        queue = waiting
    return started


def shared_gpu_pods(factory: PodFactory, node: Node, t0: int, window_end: int) -> list[Pod]:
    """Inference replicas on the shared node for the whole window: one per MIG instance (kube
    resource nvidia_com_mig_<profile>) and several per time-sliced GPU (nvidia_com_gpu_shared)."""
    rng = factory.rng
    pods: list[Pod] = []
    slots = [(g, mig) for g, instances in SHARED_NODE_MIG.items() for mig in instances]
    slots += [(g, None) for g, n in SHARED_NODE_REPLICAS.items() for _ in range(n)]
    projects = sorted(SERVING_PROJECTS)
    for i, (g, mig) in enumerate(slots):
        project = projects[i % len(projects)]
        team = factory.project_team[project]
        user = rng.choice(sorted(u for u, t in factory.user_team.items() if t == team))
        kind = f"mig-{mig[1].replace('.', '-')}" if mig else "ts"
        pod = factory.make("inference", t0, user=user, project=project, gpus=1,
                           duration=window_end - t0, fixed_end=window_end,
                           template=f"{node.cluster}/shared/{i}",
                           rs_name=f"{project}-{kind}-{random_suffix(rng, 9)}")  # fmt: skip
        main = pod.containers[0]
        main.cpu, main.memory = "4", str(24 * GIB)
        if mig:
            main.gpu_resource = "nvidia_com_mig_" + mig[1].replace(".", "_")
            pod.prof["mig"] = mig
        else:
            main.gpu_resource = "nvidia_com_gpu_shared"
            pod.prof["shared"] = True
        pod.node, pod.gpu_idx, pod.start, pod.end = node, (g,), t0, window_end
        pod.pod_ip = f"10.{node.cluster + 1}.250.{1 + i}"
        pods.append(pod)
    return pods


def make_cpu_only_pods(
    factory: PodFactory, cluster: Cluster, t0: int, window_end: int, step: int
) -> list[Pod]:
    """Feature-ETL jobs that need no GPU but run on the GPU nodes (two or three a day): they hold
    cores and memory of the node, and pay for them from its CPU and memory parts."""
    rng = factory.rng
    nodes = [n for n in cluster.nodes if not n.reserved]
    pods: list[Pod] = []
    for day in range((window_end - t0) // SECONDS_PER_DAY):
        for _ in range(rng.randint(2, 3)):
            start = t0 + day * SECONDS_PER_DAY + rng.randrange(0, SECONDS_PER_DAY // step) * step
            candidates = [n for n in nodes if n.join <= start]
            if not candidates:
                continue
            user = rng.choice(factory.users)
            project = factory._project_for(user, start)
            job = factory._unique(
                lambda project=project: f"{project}-feature-etl-{random_hex(rng, 5)}"
            )
            cores = rng.choice((4, 8, 16))
            container = factory._container(
                "etl", f"ghcr.io/acme/feature-etl:1.{rng.randint(0, 9)}.{rng.randint(0, 9)}",
                str(cores), cores * 4 * GIB, 0,
            )  # fmt: skip
            factory.seq += 1
            node = rng.choice(candidates)
            end = min(window_end, start + rng.randrange(1, 5) * 3600)
            pods.append(
                Pod(seq=factory.seq, cluster=cluster.idx, kind="etl",
                    name=f"{job}-{random_suffix(rng, 5)}",
                    namespace=factory.namespace("etl", factory.user_team[user], project),
                    uid=random_uuid(rng), user=user, team=factory.owner_team(project, start),
                    user_team=factory.user_team[user], project=project,
                    gpus=0, arrival=start, duration=end - start, fixed_end=end,
                    template=f"{cluster.idx}/etl/{factory.seq}", created_by_kind="Job",
                    created_by_name=job, app="feature-etl", containers=[container], prof={},
                    node=node, gpu_idx=(), start=start, end=end,
                    pod_ip=f"10.{cluster.idx + 1}.251.{1 + len(pods) % 250}")
            )  # fmt: skip
    return pods


def assign_tags(
    pods: list[Pod], rng: random.Random, fraction: float, typo: dict[str, str]
) -> tuple[int, int]:
    """Decide which workloads lose their project label; returns (untagged pods, typo pods)."""
    templates: dict[str, list[Pod]] = {}
    for p in pods:
        templates.setdefault(p.template, []).append(p)
    keyed = []
    for i, (name, members) in enumerate(templates.items()):
        w = UNTAG_WEIGHT[members[0].kind]
        keyed.append((rng.random() ** (1.0 / w), -i, name))
    keyed.sort(reverse=True)
    target = round(fraction * len(pods))
    untagged = 0
    tagged_singles: list[str] = []
    for _, _, name in keyed:
        members = templates[name]
        if untagged + len(members) <= target:
            untagged += len(members)
            for p in members:
                p.tag_state = "untagged"
        elif len(members) == 1:
            tagged_singles.append(name)
    tagged_singles.sort()
    n_typo = min(len(tagged_singles), round(0.02 * len(pods)))
    for name in rng.sample(tagged_singles, n_typo):
        templates[name][0].tag_state = "typo"
    for members in templates.values():
        r = rng.random()
        for p in members:
            labels: dict[str, str] = {}
            if p.tag_state == "untagged":
                # 35 % team + user, 20 % team only, 20 % user only, 25 % nothing at all
                if r < 0.55:
                    labels["label_team_id"] = p.user_team
                if (r < 0.35 or 0.55 <= r < 0.75) and not p.user.startswith("system:"):
                    labels["label_user_id"] = p.user
            else:
                proj = typo[p.project] if p.tag_state == "typo" else p.project
                labels = {
                    "label_project_id": proj,
                    "label_team_id": p.user_team,
                    "label_user_id": p.user,
                }
                if p.user.startswith("system:"):
                    del labels["label_user_id"]
            p.labels = labels
    return untagged, n_typo


def stamp_creators(fleet: list[Cluster], pods: list[Pod], share: float) -> int:
    """Hard mode: the first ``round(share * clusters)`` clusters run a mutating admission webhook
    that stamps ``gpucost.io/created-by`` on each workload it admits, from the AdmissionReview
    request's ``userInfo.username`` (the kube-apiserver audit log has the same name on the
    workload's ``create`` Event). The webhook mutates the owner (Job, PyTorchJob, Deployment,
    Notebook) and its pod template, so a controller's pods carry the user who created the owner,
    not the controller's service account. That user is the OIDC name (``alice@acme.example``) of
    the person who submitted a training, fine-tune, evaluation or ETL job, or a service account
    that names no person: a CI pipeline's, the notebook web app's (it creates the Notebook object
    for the user), the GitOps controller's (serving Deployments). Clusters without the webhook
    stamp nothing. Returns the number of pods stamped."""
    stamped = 0
    with_webhook = {cl.idx for cl in fleet[: round(share * len(fleet))]}
    for p in pods:
        if p.cluster not in with_webhook:
            continue
        who = CREATOR_SERVICE_ACCOUNTS.get(p.kind, p.user)
        if not who.startswith("system:"):
            who = f"{who}@{CREATOR_DOMAIN}"
        p.creator = who
        stamped += 1
    return stamped
