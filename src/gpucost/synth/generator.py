"""Deterministic generator of a month of raw landing-zone files for a GPU fleet.

Everything is derived from ``random.Random`` instances seeded from ``seed`` (string seeds are
hashed with SHA-512 by the stdlib, so they do not depend on ``PYTHONHASHSEED``); no wall-clock
time, no set iteration order.  Same MonthConfig -> byte-identical files.

``MonthConfig.resolution`` ``hourly`` writes the telemetry as the collector's hourly files instead
(gpucost.synth.hourly); the rest is the same.

Layout written below ``out_dir``::

    billing/focus/<YYYY-MM>/focus_export_<billing account id>.csv   FOCUS 1.2 CSV export
    metrics/dcgm/<cluster>/<YYYY-MM-DD>/<DCGM metric>.json          Prometheus query_range
    metrics/kube/<cluster>/<YYYY-MM-DD>/<kube metric>.json          Prometheus query_range
                                        (KUBE_METRICS, and VOLUME_METRICS: PVs, claims, pod volumes)
    metrics/serving/<cluster>/<YYYY-MM-DD>/<metric>.json            Prometheus query_range: the
                                        inference pods' vLLM / TGI / Triton counters (synth.serving)
    reference/org_mapping.csv                                       project -> team -> cost center

Conventions a consumer must know:

* A sample at unix time ``t`` describes the interval ``[t, t + step_seconds)``.  Nodes exist from
  their (hour aligned) join time to the end of the window; pods exist on ``[start, end)``, and
  every pod series (kube_pod_* and the DCGM series carrying ``pod``) has samples exactly at the
  step times in that interval.  ``kube_pod_completion_time`` is the only exception: it has a
  single sample at ``t == end`` (the scrape right after the container terminated), one series
  per container, and only for pods that ended before the window end.
* Node-hour FOCUS lines exist for exactly the hours in which the node has ``kube_node_info``
  samples.  DCGM has a ~1 hour hole for one node (exporter down) while kube metrics continue.
* DCGM node label: ``Hostname`` everywhere except cluster index 1 (``gpu-west``) which uses the
  lowercase ``hostname`` (older exporter).  The value is the kube node name.
* Pod names are not unique over time (``jupyter-<user>-0`` is re-created); ``uid`` is.  The same
  pod name can also exist in two clusters at once: join on ``cluster`` too.
* ``label_team_id`` is the *user's* team; a user sometimes works on another team's project, so
  it can disagree with the org mapping of ``label_project_id``.  About 2 % of the tagged pods
  carry a misspelled project id that is not in ``reference/org_mapping.csv``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from gpucost.synth import generator_slurm
from gpucost.synth.bills import FocusWriter, bill_day, bill_day_tagged_egress, build_storage
from gpucost.synth.common import iso, random_hex, sku_id
from gpucost.synth.config import MonthConfig
from gpucost.synth.fleet import add_shared_gpu_node, build_fleet, build_org
from gpucost.synth.habits import assign_habit_tags, build_habits
from gpucost.synth.hourly import run_chunks, write_hourly_group_day
from gpucost.synth.inventory import write_org, write_pod_specs, write_truth
from gpucost.synth.reference import (
    DCGM_METRICS,
    FOCUS_COLUMNS,
    GPUS_PER_NODE,
    HANDOFF_PROJECT,
    INSTANCE_TYPES,
    KUBE_METRICS,
    P4D,
    SECONDS_PER_DAY,
    VOLUME_METRICS,
)
from gpucost.synth.scheduling import (
    Pod,
    PodFactory,
    assign_tags,
    cluster_arrivals,
    make_cpu_only_pods,
    schedule,
    shared_gpu_pods,
    stamp_creators,
)
from gpucost.synth.serving import array_totals, serving_day, text_totals
from gpucost.synth.telemetry import (
    Gap,
    cluster_dcgm_day,
    cluster_kube_day,
    text_run,
    text_segments,
    write_matrix,
)
from gpucost.synth.telemetry_arrays import array_segments
from gpucost.synth.volumes import build_volume_claims, claim_storage, volume_kube_day

__all__ = [
    "DCGM_METRICS",
    "FOCUS_COLUMNS",
    "HANDOFF_PROJECT",
    "KUBE_METRICS",
    "VOLUME_METRICS",
    "MonthConfig",
    "generate_month",
]


def generate_month(
    out_dir: Path,
    config: MonthConfig | None = None,
    *,
    truth_csv: Path | None = None,
    openmetrics: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Generate ``config.days`` days of raw billing, DCGM and kube-state-metrics files into
    ``out_dir``: :class:`MonthConfig` says which month (default: the demo's); the same config
    writes the same bytes.

    Returns a summary dict (``billed_total`` / ``effective_total`` are exact ``Decimal`` sums of
    the strings written; ``samples`` counts every ``[ts, value]`` pair in the DCGM files, i.e.
    4 per GPU per step; ``gpu_samples`` counts GPU-steps).

    ``truth_csv`` (outside the landing zone) receives every pod's true project and the team that
    owned it at the pod's time (hand-overs): cluster, namespace, pod, uid, project_id, team_id,
    kind, tag_state (tagged, untagged, typo: an id not in the org mapping, wrong_tag: another valid
    project's id), user_id and user_team_id (who launched it), started_at. ``openmetrics``
    (outside the landing zone) receives the month's series as OpenMetrics text, the input of
    ``promtool tsdb create-blocks-from openmetrics`` (gpucost.commands.openmetrics).
    ``progress`` receives one line per day.
    """
    config = config if config is not None else MonthConfig()
    if openmetrics is not None and config.resolution != "raw":
        raise ValueError("openmetrics: the month's raw series, written with resolution raw only")
    seed, nodes, days, step = config.seed, config.nodes, config.days, config.step_seconds
    clusters, hard, slurm_nodes = config.clusters, config.hard, config.slurm_nodes
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0, window_end = config.t0, config.window_end

    rng = random.Random(seed)
    user_team, project_team, typo = build_org(rng)
    fleet = build_fleet(rng, nodes, clusters, t0, window_end)
    shared_node = None
    if config.shared_gpus:
        shared_node = add_shared_gpu_node(fleet[0], random.Random(f"{seed}/shared-node"), nodes, t0)
    account_id = str(rng.randrange(10**11, 10**12))

    # Hard mode: the organisation's habits (its own random stream: the rest of the month stays)
    habits = None
    if hard:
        habits = build_habits(
            random.Random(f"{seed}/habits"),
            user_team,
            t0,
            window_end,
            never_tagging_teams=config.never_tagging_teams,
            never_tagging_people=config.never_tagging_people,
            compliance_spread=config.compliance_spread,
            handover_share=config.handover_share,
            born_projects=config.born_projects,
            project_team=project_team,
        )
    layouts = {
        cl.idx: config.namespace_layouts[cl.idx % len(config.namespace_layouts)] if hard else "team"
        for cl in fleet
    }
    confusions: dict = {
        "handoff_at": (t0 + window_end) // 2 if hard else 0,
        "layout": "team",
        "born": habits.born if habits else None,
    }

    # Workloads and scheduling (small: a few records per pod for the whole window).
    all_pods: list[Pod] = []
    arrivals_total = 0
    for cl in fleet:
        wrng = random.Random(f"{seed}/workload/{cl.name}")
        confusions["layout"] = layouts[cl.idx]
        factory = PodFactory(
            wrng,
            cl,
            user_team,
            project_team,
            step,
            hard=hard,
            spec_seed=f"{seed}/specs/{cl.name}",
            generic_share=config.generic_name_share,
            drift=config.namespace_drift,
            moves=habits.moves if habits else None,
            **confusions,
        )
        arrivals = cluster_arrivals(factory, cl, t0, window_end, step)
        arrivals_total += len(arrivals)
        all_pods.extend(schedule(cl, arrivals, t0, window_end, step, wrng.randrange(0, 5000)))
        extra = PodFactory(
            random.Random(f"{seed}/extra-workloads/{cl.name}"),
            cl,
            user_team,
            project_team,
            step,
            **confusions,
        )
        extra.seq = 1_000_000  # after the scheduled pods' sequence numbers
        if shared_node is not None and shared_node.cluster == cl.idx:
            all_pods.extend(shared_gpu_pods(extra, shared_node, t0, window_end))
        if config.cpu_only_pods:
            all_pods.extend(make_cpu_only_pods(extra, cl, t0, window_end, step))
    hpc: generator_slurm.SlurmCluster | None = None
    if slurm_nodes:
        srng = random.Random(f"{seed}/slurm")
        hpc = generator_slurm.build_cluster(srng, P4D, slurm_nodes, t0, GPUS_PER_NODE, random_hex)
        team_projects: dict[str, list[str]] = {}
        for project, team in project_team.items():
            team_projects.setdefault(team, []).append(project)
        generator_slurm.schedule_jobs(srng, hpc, user_team, team_projects, t0, window_end, step)
    tag_rng = random.Random(f"{seed}/tags")
    n_wrong = 0
    if habits is None:
        untagged, n_typo = assign_tags(all_pods, tag_rng, config.untagged_fraction, typo)
    else:
        untagged, n_typo, n_wrong = assign_habit_tags(
            all_pods,
            tag_rng,
            config.untagged_fraction,
            typo,
            habits,
            project_team,
            config.wrong_tag_share,
        )

    if truth_csv is not None:
        write_truth(Path(truth_csv), fleet, all_pods)
    stamped = stamp_creators(fleet, all_pods, config.creator_webhook_share) if hard else 0
    # hard mode: pod specs are landed for the first clusters only (rounded half up)
    spec_fleet = fleet[: int(config.pod_spec_share * len(fleet) + 0.5)] if hard else []
    spec_files = write_pod_specs(out_dir, spec_fleet, all_pods, t0, days, window_end)

    # Telemetry gap: one node's exporter is down for an hour.
    gap_rng = random.Random(f"{seed}/gap")
    candidates = [n for cl in fleet for n in cl.nodes if n.join == t0 and not n.reserved]
    gap_node = gap_rng.choice(candidates)
    gap_day = gap_rng.randrange(1, days - 1) if days > 2 else 0
    gap_start = t0 + gap_day * SECONDS_PER_DAY + gap_rng.randrange(8, 20) * 3600
    gap = Gap(gap_node.idx, gap_start, gap_start + 3600)

    # Index pods by (cluster, day) for the day-by-day emission.
    by_day: dict[tuple[int, int], list[Pod]] = {}
    for p in sorted(all_pods, key=lambda p: (p.cluster, p.start, p.seq)):
        last = min(p.end, window_end) - step
        d_last = (last - t0) // SECONDS_PER_DAY
        if p.end < window_end:
            d_last = max(d_last, (p.end - t0) // SECONDS_PER_DAY)
        for d in range((p.start - t0) // SECONDS_PER_DAY, d_last + 1):
            by_day.setdefault((p.cluster, d), []).append(p)

    storage = build_storage(random.Random(f"{seed}/storage"), fleet, project_team)
    claims = build_volume_claims(random.Random(f"{seed}/volumes"), fleet, all_pods)
    storage.extend(claim_storage(claims))
    bill_rng = random.Random(f"{seed}/bill")
    focus = FocusWriter(out_dir, account_id, "Acme ML Payer")
    files = 1
    handoff = None
    if hard and config.dated_org_mapping:
        # the first midnight at or after the hand-over: the date its new team owns it from
        day = -(-confusions["handoff_at"] // 86_400) * 86_400
        handoff = (
            HANDOFF_PROJECT[0],
            HANDOFF_PROJECT[1],
            datetime.fromtimestamp(day, UTC).strftime("%Y-%m-%d"),
        )
    write_org(out_dir, handoff)
    samples_total = 0
    serving_states: dict = {}  # each inference pod's counters, carried from day to day
    allocated_gpu_s = 0
    existing_gpu_s = 0
    sku_cache = {it.name: sku_id(f"{it.name}/BoxUsage") for it in INSTANCE_TYPES}

    # the hourly path renders no sample: arrays and runs go straight to the hourly aggregates
    hourly = config.resolution == "hourly"
    segments, run = (array_segments, run_chunks) if hourly else (text_segments, text_run)
    totals = array_totals if hourly else text_totals

    def land(folder: Path, group: str, cluster: str, by_metric: dict[str, list]) -> int:
        """One cluster-day of a group's series: raw, or as the collector's hourly files."""
        if config.resolution == "hourly":
            return write_hourly_group_day(folder, group, cluster, by_metric, step)
        folder.mkdir(parents=True, exist_ok=True)
        for metric, series in by_metric.items():
            write_matrix(folder / f"{metric.replace(':', '_')}.json", series)
        return len(by_metric)

    try:
        for d in range(days):
            day_start = t0 + d * SECONDS_PER_DAY
            date = datetime.fromtimestamp(day_start, UTC).strftime("%Y-%m-%d")
            day_samples = 0
            day_pods = 0
            for cl in fleet:
                pods_today = by_day.pop((cl.idx, d), [])
                day_pods += sum(1 for p in pods_today if min(p.end, window_end) > day_start)
                drng = random.Random(f"{seed}/dcgm/{cl.name}/{date}")
                dcgm, n = cluster_dcgm_day(
                    cl, pods_today, day_start, step, window_end, gap, drng, segments
                )
                day_samples += n
                files += land(out_dir / "metrics" / "dcgm" / cl.name / date, "dcgm", cl.name, dcgm)
                del dcgm
                kube = cluster_kube_day(cl, pods_today, day_start, step, window_end, run)
                kube |= volume_kube_day(cl, claims, pods_today, day_start, step, window_end, run)
                files += land(out_dir / "metrics" / "kube" / cl.name / date, "kube", cl.name, kube)
                del kube
                serving = serving_day(
                    pods_today,
                    day_start,
                    step,
                    window_end,
                    seed,
                    cl.tz_hours,
                    serving_states,
                    render=totals,
                )
                if serving:
                    folder = out_dir / "metrics" / "serving" / cl.name / date
                    files += land(folder, "serving", cl.name, serving)
                for p in pods_today:
                    if p.node is None or p.node.reserved:
                        continue  # the share of scheduled whole GPUs (the shared node is apart)
                    lo = max(p.start, day_start)
                    hi = min(p.end, window_end, day_start + SECONDS_PER_DAY)
                    if hi > lo:
                        allocated_gpu_s += p.gpus * (hi - lo)
                for node in cl.nodes:
                    if node.reserved:
                        continue
                    lo = max(node.join, day_start)
                    if lo < day_start + SECONDS_PER_DAY:
                        existing_gpu_s += GPUS_PER_NODE * (day_start + SECONDS_PER_DAY - lo)
            if hpc is not None:
                generator_slurm.write_sacct_day(out_dir, hpc, day_start, window_end)
                hrng = random.Random(f"{seed}/dcgm/{hpc.name}/{date}")
                dcgm, n = generator_slurm.dcgm_day(hpc, day_start, step, window_end, hrng)
                day_samples += n
                folder = out_dir / "metrics" / "dcgm" / hpc.name / date
                files += land(folder, "dcgm", hpc.name, dcgm)
                del dcgm
            samples_total += day_samples
            bill_day(focus, fleet, storage, day_start, bill_rng, sku_cache, hpc)
            bill_day_tagged_egress(focus, fleet, day_start, project_team)
            if progress is not None:
                progress(f"day {d + 1}/{days} ({date}): {day_pods} pods, {day_samples} samples")
        focus.close_month()
    finally:
        if focus.fh is not None:
            focus.fh.close()
    files += focus.files + spec_files
    if openmetrics is not None:
        from gpucost.commands.openmetrics import write_openmetrics_file

        write_openmetrics_file(out_dir, Path(openmetrics))

    return {
        "out_dir": str(out_dir),
        "seed": seed,
        "start": iso(t0),
        "end": iso(window_end),
        "days": days,
        "step_seconds": step,
        "resolution": config.resolution,
        "files": files,
        "bill_lines": focus.lines,
        "billed_total": focus.billed_total,
        "effective_total": focus.effective_total,
        "billing_account_id": account_id,
        "months": focus.months,
        "pods": len(all_pods),
        "untagged_pods": untagged,
        "typo_pods": n_typo,
        "wrong_tag_pods": n_wrong,
        "never_tagging_teams": list(habits.never_tagging_teams) if habits else [],
        "never_tagging_people": sorted(
            u
            for u, c in habits.compliance.items()
            if c == 0.0 and user_team[u] not in habits.never_tagging_teams
        )
        if habits
        else [],
        "born_projects": {p: iso(t) for p, t in habits.born.items()} if habits else {},
        "people_moved": {u: iso(m[0]) for u, m in habits.moves.items()} if habits else {},
        "pod_spec_clusters": [cl.name for cl in spec_fleet],
        "namespace_layouts": {cl.name: layouts[cl.idx] for cl in fleet},
        "creator_stamped_pods": stamped,
        "pods_never_scheduled": arrivals_total - len(all_pods),
        "samples": samples_total,
        "gpu_samples": samples_total // len(DCGM_METRICS),
        "gpu_allocation": round(allocated_gpu_s / existing_gpu_s, 4) if existing_gpu_s else 0.0,
        "telemetry_gap": {
            "cluster": fleet[gap_node.cluster].name,
            "node": gap_node.name,
            "start": iso(gap.start),
            "end": iso(gap.end),
        },
        "late_node": next(
            (
                {"node": n.name, "joined": iso(n.join)}
                for c in fleet
                for n in c.nodes
                if n.join > t0
            ),
            None,
        ),
        "slurm": None
        if hpc is None
        else {
            "cluster": hpc.name,
            "nodes": [n.name for n in hpc.nodes],
            "jobs": len(hpc.jobs),
            "array_tasks": sum(1 for j in hpc.jobs if "_" in j.job_id),
        },
        "volume_claims": [
            {
                "cluster": c.cluster.name,
                "namespace": c.namespace,
                "claim": c.claim,
                "volume": c.volume,
                "volume_id": c.volume_id,
                "holders": sorted(c.holders),
            }
            for c in claims
        ],
        "clusters": [
            {
                "name": cl.name,
                "region": cl.region,
                "sub_account_id": cl.sub_account_id,
                "hostname_label": cl.hostname_label,
                "nodes": [n.name for n in cl.nodes],
            }
            for cl in fleet
        ],
    }
