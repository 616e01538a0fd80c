"""Files beside the telemetry: the org mapping, the Kubernetes API pod specs (hard mode) and the
generator's truth (outside the landing zone)."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpucost.synth.common import iso
from gpucost.synth.fleet import Cluster
from gpucost.synth.reference import CREATOR_ANNOTATION, SECONDS_PER_DAY, TEAMS
from gpucost.synth.scheduling import Pod

TRUTH_COLUMNS = (
    *("cluster", "namespace", "pod", "uid", "project_id", "team_id", "kind", "tag_state"),
    *("user_id", "user_team_id", "started_at"),
)


def write_truth(path: Path, fleet: list[Cluster], pods: list[Pod]) -> None:
    """Every pod's true project and the team that owned it at the pod's time (what attribution
    should find), its tag state, who launched it (a person or a pipeline's service account) and
    their team, and when it started, for benchmarks and tests."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(TRUTH_COLUMNS)
        for p in sorted(pods, key=lambda p: (p.cluster, p.seq)):
            cluster = fleet[p.cluster].name
            row = [cluster, p.namespace, p.name, p.uid, p.project, p.team, p.kind, p.tag_state]
            writer.writerow([*row, p.user, p.user_team, iso(p.start)])


def write_pod_specs(
    out_dir: Path, fleet: list[Cluster], pods: list[Pod], t0: int, days: int, window_end: int
) -> int:
    """Hard mode: a daily `kubectl get pods --all-namespaces -o json` snapshot per cluster (a v1
    List of Pods) under inventory/kube/<cluster>/pods-<date>.json. Container command, args and
    workingDir and the mounted volumes live only in the pod spec (kube-state-metrics does not export
    them). Returns the number of files written."""
    files = 0
    for cl in fleet:
        for d in range(days):
            day_start = t0 + d * SECONDS_PER_DAY
            day_end = min(day_start + SECONDS_PER_DAY, window_end)
            alive = [
                p for p in pods if p.cluster == cl.idx and p.start < day_end and p.end > day_start
            ]
            items = [_pod_object(p) for p in sorted(alive, key=lambda p: (p.start, p.seq))]
            date = datetime.fromtimestamp(day_start, UTC).strftime("%Y-%m-%d")
            path = out_dir / "inventory" / "kube" / cl.name / f"pods-{date}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {}}
            path.write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
            files += 1
    return files


def _pod_object(p: Pod) -> dict[str, Any]:
    """One Pod as the Kubernetes API returns it (the fields a snapshot keeps)."""
    containers = []
    for c in p.containers:
        spec: dict[str, Any] = {"image": c.image, "name": c.name}
        if c.command:
            spec["command"] = c.command
        if c.args:
            spec["args"] = c.args
        if c.working_dir:
            spec["workingDir"] = c.working_dir
        requests: dict[str, str] = {"cpu": c.cpu, "memory": c.memory}
        if c.gpus:
            requests["nvidia.com/gpu"] = str(c.gpus)
        spec["resources"] = {"requests": requests}
        containers.append(spec)
    volumes = [
        {"name": f"vol-{i}", "persistentVolumeClaim": {"claimName": claim}}
        for i, claim in enumerate(p.volume_claims)
    ]
    labels = {k.removeprefix("label_"): v for k, v in p.labels.items()}
    labels["app"] = p.app
    metadata: dict[str, Any] = {"annotations": {CREATOR_ANNOTATION: p.creator}} if p.creator else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **metadata,
            "creationTimestamp": iso(p.start),
            "labels": dict(sorted(labels.items())),
            "name": p.name,
            "namespace": p.namespace,
            "ownerReferences": [
                {"controller": True, "kind": p.created_by_kind, "name": p.created_by_name}
            ],
            "uid": p.uid,
        },
        "spec": {
            "containers": containers,
            "nodeName": p.node.name if p.node else None,
            "volumes": volumes,
        },
        "status": {"podIP": p.pod_ip, "startTime": iso(p.start)},
    }


def write_org(out_dir: Path, handoff: tuple[str, str, str] | None = None) -> Path:
    """The org mapping, one row per project; with ``handoff`` (project, new team, UTC date) a
    dated mapping instead (columns valid_from, valid_to): the project's row until that date, the
    new team's from it."""
    path = out_dir / "reference" / "org_mapping.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    teams = {team_id: (team_name, cc) for team_id, team_name, cc, _ in TEAMS}
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        header = ("project_id", "project_name", "team_id", "team_name", "cost_center")
        w.writerow(header + (("valid_from", "valid_to") if handoff else ()))
        for team_id, team_name, cc, projects in TEAMS:
            for pid, pname, _ in projects:
                if handoff is None:
                    w.writerow((pid, pname, team_id, team_name, cc))
                elif pid != handoff[0]:
                    w.writerow((pid, pname, team_id, team_name, cc, "", ""))
                else:
                    new_team, day = handoff[1], handoff[2]
                    w.writerow((pid, pname, team_id, team_name, cc, "", day))
                    w.writerow((pid, pname, new_team, *teams[new_team], day, ""))
    return path
