"""Reference row core (tests only): storage bill lines split over the pods that held the volume.

A bill line for a cloud disk (``vol-0abc``, a GCP disk, an Azure managed disk) that a Kubernetes
PersistentVolume carries belongs to whoever held the claim bound to that volume. Each pod
incarnation that held the claim during the line's charge period (alive, and its spec naming the
claim) pays in proportion to the milliseconds it held it; a line no pod held in its period stays
whole as an ``unallocated`` row with the reason (``volume_without_pod`` / ``volume_without_claim``).

Pure functions over plain records (``dict`` rows, money as ``Decimal``); no dbt, no database.
The invariant: for every line, the returned rows' ``billed_cost``, ``effective_cost`` and
``allocation_ratio`` sum exactly to the line's amounts and to 1 (largest remainder in 1e-18 units,
:func:`tests.python.reference.allocation.split_exact`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from gpucost.core.money import UNIT, from_units, to_units
from tests.python.reference.allocation import split_exact

Row = dict[str, Any]

VOLUME_CLAIM_BASIS = "volume_claim"
"""``allocation_basis`` of every row returned here: the share is the time the claim was held."""


def _reason(line: Row) -> str:
    claims = line.get("claim_ids")
    if claims:
        return f"volume_without_pod: {claims}"
    volumes = line.get("persistent_volume_ids") or line.get("volume_key") or "?"
    return f"volume_without_claim: {volumes}"


def allocate_volume_lines(lines: Iterable[Row], mounts: Iterable[Row]) -> list[Row]:
    """Split each volume line across the pods that held its claim, by claim-holding time.

    ``lines``: ``charge_id``, ``billed_cost``, ``effective_cost`` (``Decimal``), and for the reason
    of a line nobody held, ``claim_ids`` (the claims bound to the disk, or null) and
    ``persistent_volume_ids``.
    ``mounts``: ``charge_id``, ``workload_id``, ``mounted_ms`` (milliseconds within the line's
    period the pod held the claim; several rows of one pod add up).

    Returns one row per line and pod with a positive time (``allocation_kind`` ``usage``), or one
    ``unallocated`` row with ``unallocated_reason`` when no pod held the claim in the period. Every
    row has ``allocation_basis`` ``volume_claim`` and ``mounted_ms``. The rows of a line sum exactly
    to it in billed cost, effective cost and ratio (1), and do not depend on the order of the input.
    """
    held: dict[Any, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for mount in mounts:
        milliseconds = int(mount.get("mounted_ms") or 0)
        if milliseconds < 0:
            raise ValueError(f"negative mounted_ms {milliseconds} for {mount!r}")
        if milliseconds and mount.get("workload_id") is not None:
            held[mount["charge_id"]][mount["workload_id"]] += milliseconds

    out: list[Row] = []
    for line in sorted(lines, key=lambda row: str(row["charge_id"])):
        charge_id = line["charge_id"]
        weights = dict(held.get(charge_id, {}))
        if not weights:
            out.append(
                {
                    "charge_id": charge_id,
                    "workload_id": None,
                    "allocation_kind": "unallocated",
                    "unallocated_reason": _reason(line),
                    "allocation_basis": VOLUME_CLAIM_BASIS,
                    "mounted_ms": 0,
                    "billed_cost": line["billed_cost"],
                    "effective_cost": line["effective_cost"],
                    "allocation_ratio": from_units(UNIT),
                }
            )
            continue
        billed = split_exact(to_units(line["billed_cost"]), weights)
        effective = split_exact(to_units(line["effective_cost"]), weights)
        ratio = split_exact(UNIT, weights)
        for workload_id in sorted(weights):
            out.append(
                {
                    "charge_id": charge_id,
                    "workload_id": workload_id,
                    "allocation_kind": "usage",
                    "unallocated_reason": None,
                    "allocation_basis": VOLUME_CLAIM_BASIS,
                    "mounted_ms": weights[workload_id],
                    "billed_cost": from_units(billed[workload_id]),
                    "effective_cost": from_units(effective[workload_id]),
                    "allocation_ratio": from_units(ratio[workload_id]),
                }
            )
    return out
