"""What month to generate: one frozen :class:`MonthConfig`, validated when it is made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from gpucost.synth.reference import SECONDS_PER_DAY


@dataclass(frozen=True, slots=True)
class MonthConfig:
    """The generated month: fleet, window, sampling, workload mix. Same config -> same bytes.

    ``hard`` makes attribution harder (the attribution benchmark): users with a fixed mix of two or
    three projects, CI service accounts without a user, images shared across projects and names that
    do not say the project, train -> eval pipelines, a project handed to another team mid-window.
    ``slurm_nodes`` GPU nodes (0: none) form a Slurm queue next to the Kubernetes clusters, with its
    sacct dumps and DCGM series (see gpucost.synth.generator_slurm).
    ``shared_gpus`` adds an H100 inference node to the first cluster whose GPUs are split into MIG
    instances (seven 1g.10gb; 3g.40gb + 2g.20gb + two 1g.10gb) or time-sliced between replicas (4
    and 2); ``cpu_only_pods`` adds feature-ETL jobs that request only CPU and memory on GPU nodes.
    ``creator_webhook_share`` (hard mode) is the share of workloads whose pods carry the admission
    webhook's creator annotation.

    Raises ``ValueError`` on a config that cannot be generated (a step that does not divide the
    hour, an empty fleet or window, fewer nodes than clusters, a share outside [0, 1], a start that
    is not a date).
    """

    seed: int = 42
    nodes: int = 16
    days: int = 30
    step_seconds: int = 300
    start: str = "2026-10-01"
    clusters: int = 2
    untagged_fraction: float = 0.5
    hard: bool = False
    slurm_nodes: int = 2
    shared_gpus: bool = True
    cpu_only_pods: bool = True
    creator_webhook_share: float = 0.5

    def __post_init__(self) -> None:
        if self.step_seconds <= 0 or 3600 % self.step_seconds:
            raise ValueError("step_seconds must divide 3600")
        if self.days < 1 or self.nodes < 1 or self.clusters < 1:
            raise ValueError("days, nodes and clusters must be >= 1")
        if self.clusters > self.nodes:
            raise ValueError("need at least one node per cluster")
        if self.slurm_nodes < 0:
            raise ValueError("slurm_nodes must be >= 0")
        if not 0.0 <= self.untagged_fraction <= 1.0:
            raise ValueError("untagged_fraction must be within [0, 1]")
        if not 0.0 <= self.creator_webhook_share <= 1.0:
            raise ValueError("creator_webhook_share must be within [0, 1]")
        if self.t0 % SECONDS_PER_DAY:
            raise ValueError("start must be a date (midnight UTC)")

    @property
    def t0(self) -> int:
        """The window's first second (unix time, midnight UTC of ``start``)."""
        return int(datetime.fromisoformat(self.start).replace(tzinfo=UTC).timestamp())

    @property
    def window_end(self) -> int:
        """The second after the window's last (unix time)."""
        return self.t0 + self.days * SECONDS_PER_DAY
