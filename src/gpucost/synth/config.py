"""What month to generate: one frozen :class:`MonthConfig`, validated when it is made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from gpucost.synth.hourly import RESOLUTIONS
from gpucost.synth.reference import MAX_BORN_PROJECTS, NAMESPACE_LAYOUTS, SECONDS_PER_DAY, TEAMS


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

    The confusions of real fleets, each a knob read only in hard mode (the non-hard month ignores
    them, byte for byte):

    * ``never_tagging_teams`` (default 1): teams none of whose people ever put a project label on a
      pod; tagging is otherwise a habit: each team has a base compliance, each person a propensity
      around it (``compliance_spread``, default 0.25, the half-width of the spread), and a share
      ``never_tagging_people`` (default 0.1, rounded) of the others never tag. Which workloads
      lose their label follows those habits; the month's untagged pod share stays
      ``untagged_fraction`` unless the people who never tag alone run more than that.
    * ``handover_share`` (default 0.2): the share of people who move from their main project to
      another at a time of their own mid-month (the project handed to another team,
      ``HANDOFF_PROJECT``, stays); ``born_projects`` (default 1, at most 2): projects of the org
      mapping whose first workload starts between a third and two thirds of the window (half the
      people of its team move onto it then).
    * ``wrong_tag_share`` (default 0.03): the share of the tagged pods whose project label is
      another project of the org mapping (valid, but not the one the work is for: a sibling of the
      person's team or the project they worked on before).
    * ``generic_name_share`` (default 0.5): the share of the jobs named ``exp-<hex>``,
      ``run-<hex>``, ``job-<n>``, ``ft-<hex>`` from shared base images instead of names and images
      that say the project (evaluations are always ``eval-<hex>``, notebooks ``jupyter-<user>``).
    * ``pod_spec_share`` (default 0.75): the share of the clusters (the first ones, rounded half
      up: both of two, two of three) whose pod specs are landed under inventory/kube.
    * ``namespace_layouts`` (default team, project, shared), given to the clusters in turn: a
      namespace per team (``team-<team>``), per project (``<project id>``), or shared namespaces
      (``batch`` for jobs, ``default`` for notebooks, serving and ETL). ``namespace_drift``
      (default 0.15): in a per-project layout, the share of a person's work for another project
      than their main one that runs in their main project's namespace (the one they work in).
    * ``dated_org_mapping`` (default False): the org mapping dates the hand-over (columns
      ``valid_from`` / ``valid_to``: the handed project's old team until the first midnight at or
      after the hand-over, its new team from then), as an organisation that records it would.

    ``resolution`` ``hourly`` writes the telemetry as ``gpucost collect --resolution hourly``
    lands it from a Prometheus holding the raw month (gpucost.synth.hourly), without the raw
    samples; bills, inventory, Slurm and reference files are those ``raw`` (the default) writes.

    Raises ``ValueError`` on a config that cannot be generated (a step that does not divide the
    hour, an empty fleet or window, fewer nodes than clusters, a share outside [0, 1], every team
    never tagging, an unknown namespace layout or resolution, a start that is not a date).
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
    never_tagging_teams: int = 1
    never_tagging_people: float = 0.1
    compliance_spread: float = 0.25
    handover_share: float = 0.2
    born_projects: int = 1
    wrong_tag_share: float = 0.03
    generic_name_share: float = 0.5
    pod_spec_share: float = 0.75
    namespace_layouts: tuple[str, ...] = ("team", "project", "shared")
    namespace_drift: float = 0.15
    dated_org_mapping: bool = False
    resolution: str = "raw"

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
        for name in (
            "creator_webhook_share",
            "never_tagging_people",
            "compliance_spread",
            "handover_share",
            "wrong_tag_share",
            "generic_name_share",
            "pod_spec_share",
            "namespace_drift",
        ):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be within [0, 1]")
        if not 0 <= self.never_tagging_teams < len(TEAMS):
            raise ValueError(f"never_tagging_teams must be within [0, {len(TEAMS) - 1}]")
        if not 0 <= self.born_projects <= MAX_BORN_PROJECTS:
            raise ValueError(f"born_projects must be within [0, {MAX_BORN_PROJECTS}]")
        if not self.namespace_layouts or set(self.namespace_layouts) - set(NAMESPACE_LAYOUTS):
            raise ValueError(f"namespace_layouts must be some of {', '.join(NAMESPACE_LAYOUTS)}")
        if self.resolution not in RESOLUTIONS:
            raise ValueError(f"resolution must be one of {', '.join(RESOLUTIONS)}")
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
