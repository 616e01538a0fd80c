"""Reference row core (tests only): a GPU node's bill line in parts, GPU, CPU and memory.

A GPU node also sells CPU and memory: a CPU-only pod scheduled on it holds cores and memory that
nobody else can use. The line is split into parts by weights (by default list price per unit x
the node's units, see seed ``node_resource_list_prices``), exactly: the parts' billed and
effective costs and ratios sum to the line's. The GPU part then goes through the GPU-time
proration (:func:`tests.python.reference.allocation.prorate_node_lines`); the CPU and memory parts go to the
workloads that requested cores / memory on the node in the line's period
(:func:`prorate_compute_parts`), each with its own idle row, spread by the idle policy among the
workloads holding that part.

Pure functions over plain rows (money as ``Decimal``), like :mod:`tests.python.reference.allocation`; the production core is :mod:`gpucost.core.node_parts`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from gpucost.core.money import UNIT, from_units, to_units
from tests.python.reference.allocation import prorate_node_lines, split_exact, spread_idle

Row = dict[str, Any]

PARTS: tuple[str, ...] = ("gpu", "cpu", "memory")
# The unit each part's basis is counted in (recorded on the rows' allocation_basis description).
PART_UNITS: Mapping[str, str] = {"gpu": "GPU-ms", "cpu": "core-ms", "memory": "MiB-ms"}


def split_line_parts(lines: Iterable[Row], weights: Iterable[Row]) -> list[Row]:
    """Split each line into its GPU / CPU / memory parts, exactly.

    ``lines``: ``charge_id``, ``billed_cost``, ``effective_cost``, ``capacity_gpu_ms``.
    ``weights``: ``charge_id``, ``resource_part``, ``part_weight`` (integer, e.g. micro-dollars
    per hour at list price), ``capacity_units`` (what the node offered of the part in the
    line's period: GPU-ms, core-ms, MiB-ms).

    A line without positive weights stays whole as its GPU part. Returns one row per part with
    ``billed_cost``, ``effective_cost``, ``allocation_ratio`` (the part's share of the line) and
    ``capacity_units``; each line's parts sum exactly to it.
    """
    by_line: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for w in weights:
        weight = int(w.get("part_weight") or 0)
        if weight > 0:
            by_line[w["charge_id"]][w["resource_part"]] = (weight, int(w["capacity_units"] or 0))
    out: list[Row] = []
    for line in lines:
        charge_id = line["charge_id"]
        parts = by_line.get(charge_id) or {}
        if not parts:
            parts = {"gpu": (1, int(line.get("capacity_gpu_ms") or 0))}
        part_weights = {part: parts[part][0] for part in PARTS if part in parts}
        billed = split_exact(to_units(line["billed_cost"]), part_weights)
        effective = split_exact(to_units(line["effective_cost"]), part_weights)
        ratio = split_exact(UNIT, part_weights)
        for part in part_weights:
            out.append(
                {
                    "charge_id": charge_id,
                    "resource_part": part,
                    "part_weight": part_weights[part],
                    "capacity_units": parts[part][1],
                    "billed_cost": from_units(billed[part]),
                    "effective_cost": from_units(effective[part]),
                    "allocation_ratio": from_units(ratio[part]),
                }
            )
    return out


def gpu_part_lines(lines: Iterable[Row], parts: Iterable[Row]) -> list[Row]:
    """The node lines with their amounts and ratio cut down to the GPU part (for GPU proration)."""
    gpu = {p["charge_id"]: p for p in parts if p["resource_part"] == "gpu"}
    out: list[Row] = []
    for line in lines:
        part = gpu.get(line["charge_id"])
        if part is None:  # the whole line went to CPU / memory parts: no GPU money to prorate
            continue
        out.append(
            line
            | {
                "billed_cost": part["billed_cost"],
                "effective_cost": part["effective_cost"],
                "allocation_ratio": part["allocation_ratio"],
            }
        )
    return out


def prorate_compute_parts(
    parts: Iterable[Row],
    usages: Iterable[Row],
    owners: Mapping[str, str] | None = None,
    policy: str = "proportional",
) -> list[Row]:
    """Allocate the CPU and memory parts to the workloads that requested them, with their idle.

    ``parts``: rows of :func:`split_line_parts` (GPU parts are ignored).
    ``usages``: ``charge_id``, ``resource_part``, ``workload_id``, ``requested_units`` (core-ms or
    MiB-ms the workload requested on the node within the line's period).
    ``owners``: workload id -> owner key (for the ``even`` idle policy; default: the workload).

    Each part is prorated like a GPU line on the requested basis (share = requested /
    max(capacity, sum of requests)); its idle row (capacity nobody requested) is spread by
    ``policy`` among the workloads that held the same part of the same line, or kept visible
    (``no_active_workload_in_scope``) when none did. Rows: ``charge_id``, ``resource_part``,
    ``workload_id``, ``allocation_kind`` (usage / idle / unallocated), ``recipient`` (workload,
    platform, unowned; None for usage), ``allocation_basis`` (``<part>:requested`` or
    ``<part>:idle_<policy>``), ``basis_units``, ``unallocated_reason``, ``billed_cost``,
    ``effective_cost``, ``allocation_ratio``. They sum exactly to each part.
    """
    owners = owners or {}
    compute = [p for p in parts if p["resource_part"] != "gpu"]
    keyed_lines = [
        {
            "charge_id": _key(p["charge_id"], p["resource_part"]),
            "billed_cost": p["billed_cost"],
            "effective_cost": p["effective_cost"],
            "allocation_ratio": p["allocation_ratio"],
            "capacity_gpu_ms": p["capacity_units"],
        }
        for p in compute
    ]
    keyed_usages = [
        {
            "charge_id": _key(u["charge_id"], u["resource_part"]),
            "workload_id": u["workload_id"],
            "requested_gpu_ms": int(u.get("requested_units") or 0),
            "used_gpu_ms": 0,
        }
        for u in usages
        if u["resource_part"] != "gpu"
    ]
    prorated = prorate_node_lines(keyed_lines, keyed_usages, basis="requested")
    origin = {_key(p["charge_id"], p["resource_part"]): p for p in compute}

    out: list[Row] = []
    idle_rows: list[Row] = []
    weights: list[Row] = []
    for row in prorated:
        part = origin[row["charge_id"]]
        base = {"charge_id": part["charge_id"], "resource_part": part["resource_part"]}
        if row["allocation_kind"] == "idle":
            idle_rows.append(
                {
                    "charge_id": row["charge_id"],
                    "scope_keys": [row["charge_id"]],
                    "basis_units": row["basis_gpu_ms"],
                    "billed_cost": row["billed_cost"],
                    "effective_cost": row["effective_cost"],
                    "allocation_ratio": row["allocation_ratio"],
                }
            )
            continue
        if row["allocation_kind"] == "usage":
            weights.append(
                {
                    "scope_key": row["charge_id"],
                    "workload_id": row["workload_id"],
                    "owner_key": owners.get(row["workload_id"], row["workload_id"]),
                    "weight": row["basis_gpu_ms"],
                }
            )
        reason = row["unallocated_reason"]
        out.append(
            base
            | {
                "workload_id": row["workload_id"],
                "allocation_kind": row["allocation_kind"],
                "recipient": None,
                "allocation_basis": f"{part['resource_part']}:requested",
                "basis_units": row["basis_gpu_ms"],
                "unallocated_reason": reason.replace("gpu_", "") if reason else None,
                "billed_cost": row["billed_cost"],
                "effective_cost": row["effective_cost"],
                "allocation_ratio": row["allocation_ratio"],
            }
        )
    basis_by_idle = {r["charge_id"]: r["basis_units"] for r in idle_rows}
    for row in spread_idle(idle_rows, weights, policy=policy):
        part = origin[row["charge_id"]]
        out.append(
            {
                "charge_id": part["charge_id"],
                "resource_part": part["resource_part"],
                "workload_id": row["workload_id"],
                "allocation_kind": "idle",
                "recipient": row["recipient"],
                "allocation_basis": f"{part['resource_part']}:idle_{policy}",
                "basis_units": basis_by_idle[row["charge_id"]],
                "unallocated_reason": row["idle_reason"],
                "billed_cost": row["billed_cost"],
                "effective_cost": row["effective_cost"],
                "allocation_ratio": row["allocation_ratio"],
            }
        )
    return out


def _key(charge_id: str, part: str) -> str:
    return f"{charge_id}#{part}"


def part_totals(rows: Iterable[Row]) -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
    """(charge_id, part) -> (billed, effective) sums: what tests and checks compare to the parts."""
    totals: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}
    for r in rows:
        key = (r["charge_id"], r["resource_part"])
        billed, effective = totals.get(key, (Decimal(0), Decimal(0)))
        totals[key] = (billed + r["billed_cost"], effective + r["effective_cost"])
    return totals
