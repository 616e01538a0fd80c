"""Persistent volumes: claims, the pods holding them, their kube-state-metrics series and their
disks on the bill (issue 4)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from gpucost.synth.bills import Storage
from gpucost.synth.common import random_hex, random_uuid, sorted_labels
from gpucost.synth.fleet import Cluster
from gpucost.synth.reference import SECONDS_PER_DAY, VOLUME_METRICS
from gpucost.synth.scheduling import Pod
from gpucost.synth.telemetry import RunFn, text_run


@dataclass(slots=True)
class _VolumeClaim:
    cluster: Cluster
    namespace: str
    claim: str
    volume: str  # the PersistentVolume's name (pvc-<uuid>, as dynamic provisioning names it)
    volume_id: str  # the EBS volume id the bill names
    size_gb: int
    zone: str
    holders: frozenset[str]  # uids of the pods whose spec names the claim


def build_volume_claims(
    rng: random.Random, fleet: list[Cluster], pods: list[Pod]
) -> list[_VolumeClaim]:
    """Per cluster: a checkpoint claim held by one project's training / fine-tuning pods in their
    namespace, a notebook home claim held by every incarnation of one user's notebook, and a scratch
    claim no pod holds. Untagged disks: their bill lines follow the pods (or stay unallocated)."""
    out: list[_VolumeClaim] = []
    for cl in fleet:
        mine = [p for p in pods if p.cluster == cl.idx]
        jobs: dict[tuple[str, str], list[Pod]] = {}
        for p in mine:
            if p.kind in ("training", "finetune"):
                jobs.setdefault((p.namespace, p.project), []).append(p)
        notebooks: dict[tuple[str, str], list[Pod]] = {}
        for p in mine:
            if p.kind == "notebook":
                notebooks.setdefault((p.namespace, p.created_by_name), []).append(p)
        wanted: list[tuple[str, str, int, list[Pod]]] = []
        if jobs:
            (ns, project), held = max(jobs.items(), key=lambda kv: (len(kv[1]), kv[0]))
            wanted.append((ns, f"ckpt-{project}", 2000, held))
        if notebooks:
            (ns, sts), held = max(notebooks.items(), key=lambda kv: (len(kv[1]), kv[0]))
            wanted.append((ns, f"home-{sts}-0", 100, held))
        scratch_ns = wanted[0][0] if wanted else "default"
        wanted.append((scratch_ns, f"scratch-{cl.name}", 500, []))
        for ns, claim, size, held in wanted:
            out.append(
                _VolumeClaim(
                    cluster=cl,
                    namespace=ns,
                    claim=claim,
                    volume="pvc-" + random_uuid(rng),
                    volume_id="vol-0" + random_hex(rng, 16),
                    size_gb=size,
                    zone=rng.choice(cl.nodes).zone,
                    holders=frozenset(p.uid for p in held),
                )
            )
    return out


def claim_storage(claims: list[_VolumeClaim]) -> list[Storage]:
    """The claims' disks as untagged EBS bill lines, named by the volume id the PV carries."""
    return [Storage(c.cluster, "ebs", c.volume_id, c.size_gb, "", 0, c.zone) for c in claims]


def volume_kube_day(
    cluster: Cluster,
    claims: list[_VolumeClaim],
    day_pods: list[Pod],
    day_start: int,
    step: int,
    window_end: int,
    run: RunFn = text_run,
) -> dict[str, list]:
    """One day of the PV / PVC / pod-volume series of one cluster (each a run of ``1``s, rendered
    by ``run``: JSON fragments by default). The cluster's first (even) index names disks by the
    EBS CSI volume handle, the other by the in-tree ebs_volume_id."""
    n_steps = SECONDS_PER_DAY // step
    out: dict[str, list] = {m: [] for m in VOLUME_METRICS}

    def pairs(ks: int, ke: int) -> list:
        return run(day_start + ks * step, step, ke - ks, "1")

    cname = cluster.name
    mine = [c for c in claims if c.cluster is cluster]
    for c in mine:
        disk = (
            {"csi_driver": "ebs.csi.aws.com", "csi_volume_handle": c.volume_id}
            if cluster.idx % 2 == 0
            else {"ebs_volume_id": f"aws://{c.zone}/{c.volume_id}"}
        )
        pv = {"cluster": cname, "persistentvolume": c.volume, "storageclass": "gp3", **disk}
        ref = {"cluster": cname, "persistentvolume": c.volume}
        ref |= {"claim_namespace": c.namespace, "name": c.claim}
        pvc = {"cluster": cname, "namespace": c.namespace, "persistentvolumeclaim": c.claim}
        pvc |= {"storageclass": "gp3", "volumename": c.volume}
        for name, labels in (
            ("kube_persistentvolume_info", pv),
            ("kube_persistentvolume_claim_ref", ref),
            ("kube_persistentvolumeclaim_info", pvc),
        ):
            out[name].append((sorted_labels({"__name__": name, **labels}), pairs(0, n_steps)))
    holders = {uid: c for c in mine for uid in c.holders}
    metric = "kube_pod_spec_volumes_persistentvolumeclaims_info"
    for p in day_pods:
        c = holders.get(p.uid)
        if c is None:
            continue
        ks = max(0, (p.start - day_start) // step)
        ke = min(n_steps, (min(p.end, window_end) - day_start) // step)
        if ke > ks:
            labels = {"__name__": metric, "cluster": cname, "namespace": p.namespace, "pod": p.name}
            labels |= {"uid": p.uid, "volume": "data", "persistentvolumeclaim": c.claim}
            out[metric].append((sorted_labels(labels), pairs(ks, ke)))
    return out
