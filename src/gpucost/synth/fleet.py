"""The fleet: clusters, GPU nodes and their labels, the organisation (users, teams, projects), the
shared-GPU (MIG / time-sliced) node."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from gpucost.synth.common import random_gpu_uuid, random_hex
from gpucost.synth.reference import (
    DCGM_PORT,
    DRIVER_VERSION,
    GPUS_PER_NODE,
    INSTANCE_TYPES,
    P5,
    SITES,
    TEAMS,
    USERS,
    InstanceType,
)


@dataclass(slots=True)
class Gpu:
    index: int
    uuid: str
    idle_w: float
    idle_fb: str
    labels: dict[str, str]


@dataclass(slots=True)
class Node:
    idx: int
    cluster: int
    name: str
    ip: str
    instance_id: str
    zone: str
    itype: InstanceType
    join: int
    gpus: list[Gpu]
    info_labels: dict[str, str]
    free: list[bool] = field(default_factory=lambda: [True] * GPUS_PER_NODE)
    free_count: int = GPUS_PER_NODE
    reserved: bool = False  # kept out of the scheduler: the shared-GPU (MIG / time-sliced) node


@dataclass(slots=True)
class Cluster:
    idx: int
    name: str
    region: str
    region_name: str
    tz_hours: int
    sub_account_id: str
    sub_account_name: str
    hostname_label: str
    nodes: list[Node] = field(default_factory=list)


def _gpu_labels(
    cl: Cluster, node: str, ip: str, itype: InstanceType, g: int, uuid: str
) -> dict[str, str]:
    """The DCGM exporter's labels of GPU ``g`` of a Kubernetes node."""
    return {
        "DCGM_FI_DRIVER_VERSION": DRIVER_VERSION,
        cl.hostname_label: node,
        "UUID": uuid,
        "cluster": cl.name,
        "device": f"nvidia{g}",
        "gpu": str(g),
        "instance": f"{ip}:{DCGM_PORT}",
        "job": "dcgm-exporter",
        "modelName": itype.gpu_model,
        "pci_bus_id": itype.pci_bus_ids[g],
    }


def _node_info_labels(
    cl: Cluster, node: str, ip: str, zone: str, instance_id: str
) -> dict[str, str]:
    """kube_node_info's labels of a node of ``cl``."""
    return {
        "cluster": cl.name,
        "container_runtime_version": "containerd://1.7.22",
        "internal_ip": ip,
        "kernel_version": "5.10.225-213.878.amzn2.x86_64",
        "kubelet_version": "v1.30.4-eks-a737599" if cl.idx % 2 == 0 else "v1.31.0-eks-a737599",
        "node": node,
        "os_image": "Amazon Linux 2",
        "provider_id": f"aws:///{zone}/{instance_id}",
    }


def _cluster_name(i: int) -> str:
    return ("gpu-east", "gpu-west")[i] if i < 2 else f"gpu-c{i + 1}"


def _node_name(ip: str, region: str) -> str:
    dashed = "ip-" + ip.replace(".", "-")
    if region == "us-east-1":
        return f"{dashed}.ec2.internal"
    return f"{dashed}.{region}.compute.internal"


def build_org(rng: random.Random) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Return (user -> team, project -> team, project -> misspelling)."""
    users = list(USERS)
    rng.shuffle(users)
    team_ids = [t[0] for t in TEAMS]
    user_team = {u: team_ids[i % len(team_ids)] for i, u in enumerate(users)}
    project_team = {p[0]: t[0] for t in TEAMS for p in t[3]}
    typo = {p[0]: p[2] for t in TEAMS for p in t[3]}
    return dict(sorted(user_team.items())), project_team, typo


def build_fleet(
    rng: random.Random, nodes: int, clusters: int, t0: int, window_end: int
) -> list[Cluster]:
    account_rng = random.Random(rng.getrandbits(64))
    out: list[Cluster] = []
    for c in range(clusters):
        region, region_name, tz = SITES[c % len(SITES)]
        name = _cluster_name(c)
        out.append(
            Cluster(
                idx=c,
                name=name,
                region=region,
                region_name=region_name,
                tz_hours=tz,
                sub_account_id=str(account_rng.randrange(10**11, 10**12)),
                sub_account_name=f"acme-ml-{name}",
                hostname_label="hostname" if c == 1 else "Hostname",
            )
        )
    used_ips: set[str] = set()
    window_hours = (window_end - t0) // 3600
    late_node = nodes - 1 if nodes >= 2 else -1
    late_offset_h = 0
    if late_node >= 0:
        late_offset_h = min(rng.randint(2 * 24 + 6, 4 * 24), max(1, window_hours // 3))
    for i in range(nodes):
        cl = out[i % clusters]
        itype = INSTANCE_TYPES[(i // clusters) % 2]
        while True:
            ip = f"10.{cl.idx + 1}.{rng.randrange(0, 64)}.{rng.randrange(1, 255)}"
            if ip not in used_ips:
                used_ips.add(ip)
                break
        name = _node_name(ip, cl.region)
        zone = cl.region + "abcd"[rng.randrange(4 if cl.region == "us-east-1" else 3)]
        instance_id = "i-0" + random_hex(rng, 16)
        join = t0 + late_offset_h * 3600 if i == late_node else t0
        gpus = []
        for g in range(GPUS_PER_NODE):
            uuid = random_gpu_uuid(rng)
            gpus.append(
                Gpu(
                    index=g,
                    uuid=uuid,
                    idle_w=itype.idle_watts + rng.uniform(-4.0, 6.0),
                    idle_fb=str(rng.choice((0, 1, 1, 3, 5))),
                    labels=_gpu_labels(cl, name, ip, itype, g, uuid),
                )
            )
        info_labels = _node_info_labels(cl, name, ip, zone, instance_id)
        cl.nodes.append(
            Node(
                idx=i,
                cluster=cl.idx,
                name=name,
                ip=ip,
                instance_id=instance_id,
                zone=zone,
                itype=itype,
                join=join,
                gpus=gpus,
                info_labels=info_labels,
            )
        )
    return out


def add_shared_gpu_node(cluster: Cluster, rng: random.Random, idx: int, t0: int) -> Node:
    """An H100 inference node of ``cluster`` kept out of the scheduler: its GPUs are split into MIG
    instances or time-sliced between replicas (SHARED_NODE_MIG / SHARED_NODE_REPLICAS)."""
    itype = P5
    ip = f"10.{cluster.idx + 1}.{64 + rng.randrange(0, 64)}.{rng.randrange(1, 255)}"
    name = _node_name(ip, cluster.region)
    zone = cluster.region + "a"
    instance_id = "i-0" + random_hex(rng, 16)
    gpus = []
    for g in range(GPUS_PER_NODE):
        uuid = random_gpu_uuid(rng)
        gpus.append(Gpu(index=g, uuid=uuid, idle_w=itype.idle_watts, idle_fb="0",
                        labels=_gpu_labels(cluster, name, ip, itype, g, uuid)))  # fmt: skip
    info = _node_info_labels(cluster, name, ip, zone, instance_id)
    node = Node(idx=idx, cluster=cluster.idx, name=name, ip=ip, instance_id=instance_id, zone=zone,
                itype=itype, join=t0, gpus=gpus, info_labels=info, reserved=True)  # fmt: skip
    cluster.nodes.append(node)
    return node
