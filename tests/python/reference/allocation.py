"""The reference row core: proration of node lines, idle spreading and shared-cost spreading.

Not production code: the production core is :mod:`gpucost.core` (narwhals frames on DuckDB or
PySpark). This is the same allocation written a second, independent way, over plain records
(``dict`` rows, money as ``Decimal``, Python integers of any size), for the property tests to
compare the production core against.

The one invariant every function keeps: for every input line (or idle row), the
``billed_cost`` and ``effective_cost`` of the rows returned for it sum exactly to the
input's, and their ``allocation_ratio`` values sum exactly to the input's ratio (1 for a
whole line). Money is split in 1e-18 units by :func:`split_exact`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal, TypeVar

from gpucost.core.money import UNIT, from_units, to_units

K = TypeVar("K")

Row = dict[str, Any]
Basis = Literal["requested", "used", "max"]
IdlePolicy = Literal["proportional", "even", "platform", "visible"]

BASES: tuple[str, ...] = ("requested", "used", "max")
IDLE_POLICIES: tuple[str, ...] = ("proportional", "even", "platform", "visible")
_IDLE = ("~idle",)  # sorts after every workload id; never collides with a real key


def split_exact(amount: int, weights: Mapping[K, int]) -> dict[K, int]:
    """Split an integer amount across keys in proportion to integer weights, exactly.

    Largest-remainder (Hamilton) method: every key first gets ``floor(|amount| * w / W)``,
    then the units left over go one each to the keys with the largest remainders, ties
    broken by the key's sort order. Invariants (property-tested):

    * the returned shares sum exactly to ``amount`` (conservation);
    * a share never has the opposite sign of ``amount`` and is zero for a zero weight;
    * the result does not depend on the order of ``weights`` (permutation invariance);
    * each share differs from the exact proportional value by less than one unit.

    A negative amount (a credit) is split as its absolute value and negated, so a credit
    is shared exactly like a charge of the same size.
    """
    if not weights:
        raise ValueError("split_exact needs at least one weight")
    for key, weight in weights.items():
        if weight < 0:
            raise ValueError(f"negative weight {weight} for {key!r}")
    total = sum(weights.values())
    if total == 0:
        raise ValueError("split_exact needs a positive total weight")
    sign = -1 if amount < 0 else 1
    magnitude = abs(amount)
    shares: dict[K, int] = {}
    remainders: list[tuple[int, str, K]] = []
    for key, weight in weights.items():
        quotient, remainder = divmod(magnitude * weight, total)
        shares[key] = quotient
        if remainder:
            remainders.append((remainder, repr(key), key))
    left = magnitude - sum(shares.values())
    # Largest remainder first; equal remainders in ascending key order.
    remainders.sort(key=lambda item: (-item[0], item[1]))
    for _, _, key in remainders[:left]:
        shares[key] += 1
    return {key: sign * share for key, share in shares.items()}


def _ratio(units: int) -> Decimal:
    return from_units(units)


def _split_row(
    billed: Decimal, effective: Decimal, ratio_units: int, weights: Mapping[Any, int]
) -> dict[Any, tuple[Decimal, Decimal, Decimal]]:
    """Split one amount pair and its ratio across weights; each of the three sums exactly."""
    billed_parts = split_exact(to_units(billed), weights)
    effective_parts = split_exact(to_units(effective), weights)
    ratio_parts = split_exact(ratio_units, weights)
    return {
        key: (
            from_units(billed_parts[key]),
            from_units(effective_parts[key]),
            _ratio(ratio_parts[key]),
        )
        for key in weights
    }


WEIGHT_SCALE = 6
"""Decimal places share weights count in (:func:`spread_shared`, :func:`split_shared_workloads`)."""

_WEIGHT_UNIT = UNIT // 10**WEIGHT_SCALE


def weight_units(weight: Decimal | int | str | None) -> int:
    """A share weight (an owner's cost, a declared weight, a read count) as whole micro-units.

    The weight times 1e6, truncated toward zero: ``Decimal("30.1234567")`` -> 30,123,456, ``3`` ->
    3,000,000; ``None`` -> 0. Weights are relative: only their digits past the sixth decimal are
    lost. The unit keeps a scope's total within 64 bits, which the lazy core
    (:mod:`gpucost.core.shared`) splits by: there a total is bounded by
    ``gpucost.core.split.MAX_TOTAL_WEIGHT`` micro-units. A weight below 1e-6 counts as zero (ignored).
    A weight with more than 18 decimals (a binary float) raises ``ValueError``, as money does.
    """
    if weight is None:
        return 0
    units = to_units(weight)
    micro = abs(units) // _WEIGHT_UNIT
    return -micro if units < 0 else micro


def basis_weight(requested_gpu_ms: int | None, used_gpu_ms: int | None, basis: str) -> int:
    """The weight of one workload on one line under an allocation basis (GPU-milliseconds)."""
    requested = int(requested_gpu_ms or 0)
    used = int(used_gpu_ms or 0)
    if basis == "requested":
        return requested
    if basis == "used":
        return used
    if basis == "max":
        return max(requested, used)
    raise ValueError(f"unknown allocation basis {basis!r}; expected one of {BASES}")


def prorate_node_lines(
    lines: Iterable[Row], usages: Iterable[Row], basis: str = "requested"
) -> list[Row]:
    """Prorate each GPU node line across the workloads that ran on the node in its period.

    ``lines``: ``charge_id``, ``billed_cost``, ``effective_cost``, ``capacity_gpu_ms`` (the
    GPU-milliseconds the node offered in the line's period, from telemetry), optionally
    ``allocation_ratio`` (the share of the bill line these amounts are, default 1),
    ``gpu_allocation_basis`` (the line's pool basis, default ``basis``) and
    ``complexity_weighting`` (weight workloads by their task complexity, default false).
    ``usages``: ``charge_id``, ``workload_id``, ``requested_gpu_ms``, ``used_gpu_ms``,
    optionally ``complexity_weight`` (``Decimal``, default 1).

    Each workload gets the share ``weight / max(capacity, sum of weights)`` of the line
    (``usage`` rows, with ``utilised_cost``: the part matching its busy GPU time, see
    :func:`utilised_share`); what no workload took is one ``idle`` row (``workload_id`` None) for
    :func:`spread_idle`. With complexity weighting the workloads' part of the line (not the
    idle) is shared by ``weight x complexity_weight`` instead, and the basis is recorded as
    ``<basis>*complexity``. A line with neither capacity nor usage is one ``unallocated`` row
    with the reason ``no_gpu_telemetry``. Shares of each line sum exactly to the line.
    """
    if basis not in BASES:
        raise ValueError(f"unknown allocation basis {basis!r}; expected one of {BASES}")
    by_line: dict[str, list[Row]] = defaultdict(list)
    for usage in usages:
        by_line[usage["charge_id"]].append(usage)

    out: list[Row] = []
    for line in lines:
        charge_id = line["charge_id"]
        line_basis = line.get("gpu_allocation_basis") or basis
        if line_basis not in BASES:
            raise ValueError(
                f"unknown allocation basis {line_basis!r} on line {charge_id};"
                f" expected one of {BASES}"
            )
        weighting = bool(line.get("complexity_weighting"))
        workloads: dict[str, int] = {}
        used_of: dict[str, int] = {}
        complexity: dict[str, int] = {}
        for usage in by_line.get(charge_id, ()):
            weight = basis_weight(
                usage.get("requested_gpu_ms"), usage.get("used_gpu_ms"), line_basis
            )
            if weight > 0:
                workload = usage["workload_id"]
                workloads[workload] = workloads.get(workload, 0) + weight
                used_of[workload] = used_of.get(workload, 0) + int(usage.get("used_gpu_ms") or 0)
                complexity[workload] = _complexity_units(usage.get("complexity_weight"))
        used_total = sum(workloads.values())
        capacity = int(line.get("capacity_gpu_ms") or 0)
        idle = max(capacity - used_total, 0)
        # a part of a line (its GPU part, see gpucost.core.node_parts) carries its share of the line
        ratio_units = (
            UNIT if line.get("allocation_ratio") is None else to_units(line["allocation_ratio"])
        )
        recorded_basis = f"{line_basis}*complexity" if weighting else line_basis
        base: Row = {"charge_id": charge_id, "allocation_basis": recorded_basis}
        if used_total + idle == 0:
            out.append(
                base
                | {
                    "workload_id": None,
                    "allocation_kind": "unallocated",
                    "unallocated_reason": "no_gpu_telemetry",
                    "basis_gpu_ms": 0,
                    "used_gpu_ms": 0,
                    "utilised_cost": from_units(0),
                    "billed_cost": line["billed_cost"],
                    "effective_cost": line["effective_cost"],
                    "allocation_ratio": _ratio(ratio_units),
                }
            )
            continue
        weights: dict[tuple[str, ...], int] = {(w,): v for w, v in workloads.items()}
        if idle:
            weights[_IDLE] = idle
        if weighting and workloads:
            # the idle part is sized by GPU time; the workloads' part is shared by weighted time
            halves = _split_row(
                line["billed_cost"],
                line["effective_cost"],
                ratio_units,
                {"work": used_total, "idle": idle},
            )
            work_billed, work_effective, work_ratio = halves["work"]
            parts = _split_row(
                work_billed,
                work_effective,
                to_units(work_ratio),
                {(w,): v * complexity[w] for w, v in workloads.items()},
            )
            if idle:
                parts[_IDLE] = halves["idle"]
        else:
            parts = _split_row(line["billed_cost"], line["effective_cost"], ratio_units, weights)
        for key, (billed, effective, ratio) in sorted(parts.items()):
            is_idle = key == _IDLE
            used = 0 if is_idle else used_of.get(key[0], 0)
            out.append(
                base
                | {
                    "workload_id": None if is_idle else key[0],
                    "allocation_kind": "idle" if is_idle else "usage",
                    "unallocated_reason": None,
                    "basis_gpu_ms": weights[key],
                    "used_gpu_ms": used,
                    "utilised_cost": utilised_share(billed, used, weights[key]),
                    "billed_cost": billed,
                    "effective_cost": effective,
                    "allocation_ratio": ratio,
                }
            )
    return out


def _complexity_units(weight: Decimal | int | float | str | None) -> int:
    """A task-complexity weight in millionths (1.5 -> 1,500,000); missing -> 1. Must be positive."""
    if weight is None:
        return 1_000_000
    units = int((Decimal(str(weight)) * 1_000_000).to_integral_value())
    if units <= 0:
        raise ValueError(f"complexity weight must be positive, got {weight!r}")
    return units


def utilised_share(cost: Decimal, used_gpu_ms: int, basis_gpu_ms: int) -> Decimal:
    """The part of a workload's cost that matches its busy GPU time.

    ``cost x min(used, basis) / basis``, split exactly (the rest, ``cost - utilised``, is the
    waste). Zero when the basis is zero.
    """
    if basis_gpu_ms <= 0 or cost == 0:
        return from_units(0)
    busy = min(max(used_gpu_ms, 0), basis_gpu_ms)
    parts = split_exact(to_units(cost), {"busy": busy, "waste": basis_gpu_ms - busy})
    return from_units(parts["busy"])


def spread_idle(
    idle_rows: Iterable[Row], weights: Iterable[Row], policy: str = "proportional"
) -> list[Row]:
    """Spread idle rows to the workloads active in the same scope, by policy.

    ``idle_rows``: ``charge_id``, ``scope_keys`` (scopes from narrow to wide, e.g. the node
    line, then its cluster-day), ``billed_cost``, ``effective_cost``, ``allocation_ratio``
    (the idle row's share of its line).
    ``weights``: ``scope_key``, ``workload_id``, ``owner_key``, ``weight`` (the workloads'
    basis GPU-milliseconds in that scope), and optionally ``recipient_group``: a row without a
    ``workload_id`` stands for a group of workloads (one owner, one way of deciding it) that
    receives its share as one row (``recipient`` = ``owner``). A wide scope (a cluster-day) holds
    thousands of workloads; one row per group keeps the spread to lines x owners, not lines x
    workloads.

    Policies: ``proportional`` (by weight), ``even`` (each active owner the same, then by
    weight between the owner's workloads), ``platform`` (the whole idle row to the platform
    owner, ``recipient`` = ``platform``), ``visible`` (kept as idle, ``recipient`` =
    ``unowned``). Each idle row goes to the first of its scopes with active workloads; with
    none, its idle stays visible with the reason ``no_active_workload_in_scope``. Output rows
    sum exactly to each idle row.
    """
    if policy not in IDLE_POLICIES:
        raise ValueError(f"unknown idle policy {policy!r}; expected one of {IDLE_POLICIES}")
    scopes: dict[str, dict[tuple[str, str], int]] = defaultdict(dict)
    groups: set[tuple[str, str]] = set()
    for row in weights:
        weight = int(row["weight"] or 0)
        if weight > 0:
            recipient_id = row["workload_id"]
            if recipient_id is None:
                recipient_id = row.get("recipient_group")
                groups.add((row["owner_key"], recipient_id))
            key = (row["owner_key"], recipient_id)
            scope = scopes[row["scope_key"]]
            scope[key] = scope.get(key, 0) + weight

    out: list[Row] = []
    for idle in idle_rows:
        ratio_units = to_units(idle["allocation_ratio"])
        base: Row = {"charge_id": idle["charge_id"], "idle_policy": policy}
        active: Mapping[tuple[str, str], int] = {}
        scope_key = None
        if policy in ("proportional", "even"):
            scope_key = next((key for key in idle["scope_keys"] or () if scopes.get(key)), None)
            active = scopes.get(scope_key, {}) if scope_key else {}
        if policy in ("platform", "visible") or not active:
            recipient = "platform" if policy == "platform" else "unowned"
            reason = None if policy in ("platform", "visible") else "no_active_workload_in_scope"
            out.append(
                base
                | {
                    "workload_id": None,
                    "recipient_group": None,
                    "recipient": recipient,
                    "scope_key": None,
                    "idle_reason": reason,
                    "billed_cost": idle["billed_cost"],
                    "effective_cost": idle["effective_cost"],
                    "allocation_ratio": idle["allocation_ratio"],
                }
            )
            continue
        if policy == "proportional":
            parts = _split_row(idle["billed_cost"], idle["effective_cost"], ratio_units, active)
        else:
            parts = _split_even_by_owner(idle, ratio_units, active)
        for key, (billed, effective, ratio) in sorted(parts.items()):
            is_group = key in groups
            out.append(
                base
                | {
                    "workload_id": None if is_group else key[1],
                    "recipient_group": key[1] if is_group else None,
                    "recipient": "owner" if is_group else "workload",
                    "scope_key": scope_key,
                    "idle_reason": None,
                    "billed_cost": billed,
                    "effective_cost": effective,
                    "allocation_ratio": ratio,
                }
            )
    return out


def claim_reserved_idle(
    idle_rows: Iterable[Row], claims: Iterable[Row]
) -> tuple[list[Row], list[Row]]:
    """Reserved-but-unused GPU time pays for idle first; the rest of the idle goes on to the policy.

    Teams that hold a reservation (a quota, like Slurm GrpTRES or a Kubernetes ResourceQuota) keep
    that capacity from others, so the part of it they left unused is theirs to pay for.

    ``idle_rows``: ``charge_id``, ``reservation_scope_key`` (the cluster and the line's period),
    ``idle_gpu_ms`` (the row's idle GPU time), ``billed_cost``, ``effective_cost``,
    ``allocation_ratio``; other keys pass through to the remaining rows.
    ``claims``: ``reservation_scope_key``, ``reservation_id``, ``team_id``, ``project_id``,
    ``unused_gpu_ms`` (reserved minus what the team used in that scope, never negative).

    Within a scope with idle ``I`` and unused reservations ``U`` in all, the holders claim
    ``C = min(U, I)``: every idle row of the scope gives the share ``C / I`` of its money, split
    between the holders in proportion to their unused time (rows with ``recipient`` =
    ``reservation``); what is left of each row is returned for :func:`spread_idle`. The reserved
    and remaining rows of each idle row sum exactly to it.
    """
    by_scope: dict[str, dict[tuple[str, str, str], int]] = defaultdict(dict)
    for claim in claims:
        unused = int(claim.get("unused_gpu_ms") or 0)
        if unused > 0:
            key = (claim["reservation_id"], claim["team_id"], claim["project_id"])
            holders = by_scope[claim["reservation_scope_key"]]
            holders[key] = holders.get(key, 0) + unused
    rows = list(idle_rows)
    idle_by_scope: dict[str, int] = defaultdict(int)
    for row in rows:
        idle_by_scope[row.get("reservation_scope_key")] += max(int(row.get("idle_gpu_ms") or 0), 0)

    reserved: list[Row] = []
    remaining: list[Row] = []
    for row in rows:
        scope = row.get("reservation_scope_key")
        holders = by_scope.get(scope, {})
        idle_total = idle_by_scope.get(scope, 0)
        claimed = min(sum(holders.values()), idle_total)
        if not holders or claimed <= 0 or int(row.get("idle_gpu_ms") or 0) <= 0:
            remaining.append(row)
            continue
        ratio_units = to_units(row["allocation_ratio"])
        halves = _split_row(
            row["billed_cost"],
            row["effective_cost"],
            ratio_units,
            {"claimed": claimed, "rest": idle_total - claimed},
        )
        billed, effective, ratio = halves["claimed"]
        parts = _split_row(billed, effective, to_units(ratio), holders)
        for (reservation_id, team_id, project_id), (p_billed, p_effective, p_ratio) in sorted(
            parts.items()
        ):
            reserved.append(
                {
                    "charge_id": row["charge_id"],
                    "workload_id": None,
                    "recipient": "reservation",
                    "idle_policy": "reservation",
                    "reservation_id": reservation_id,
                    "team_id": team_id,
                    "project_id": project_id,
                    "scope_key": scope,
                    "idle_reason": None,
                    "billed_cost": p_billed,
                    "effective_cost": p_effective,
                    "allocation_ratio": p_ratio,
                }
            )
        rest_billed, rest_effective, rest_ratio = halves["rest"]
        if rest_billed or rest_effective or rest_ratio:
            remaining.append(
                row
                | {
                    "billed_cost": rest_billed,
                    "effective_cost": rest_effective,
                    "allocation_ratio": rest_ratio,
                }
            )
    return reserved, remaining


def _split_even_by_owner(
    idle: Row, ratio_units: int, active: Mapping[tuple[str, str], int]
) -> dict[tuple[str, str], tuple[Decimal, Decimal, Decimal]]:
    owners = sorted({owner for owner, _ in active})
    first = _split_row(
        idle["billed_cost"], idle["effective_cost"], ratio_units, dict.fromkeys(owners, 1)
    )
    parts: dict[tuple[str, str], tuple[Decimal, Decimal, Decimal]] = {}
    for owner, (billed, effective, ratio) in first.items():
        inner = {key: weight for key, weight in active.items() if key[0] == owner}
        parts |= _split_row(billed, effective, to_units(ratio), inner)
    return parts


def spread_shared(lines: Iterable[Row], weights: Iterable[Row]) -> list[Row]:
    """Spread shared lines (untagged storage / network, support, tax, credits) to owners.

    ``lines``: ``charge_id``, ``billed_cost``, ``effective_cost``, ``scope_keys`` (a list of
    scopes from narrow to wide, e.g. the billing account's period, then the whole period).
    ``weights``: ``scope_key``, ``recipient_id``, ``weight`` (an owner's placed cost in the
    scope, a ``Decimal`` amount), counted in whole micro-units (:func:`weight_units`: times 1e6,
    truncated toward zero); a weight that is not positive in those units (below 1e-6) is ignored.

    Each line goes to the first scope with a positive total weight, in proportion to the
    weights; a line with no such scope is one row with ``recipient_id`` None and the reason
    ``no_owner_cost_in_period``. Rows sum exactly to each line.
    """
    scopes: dict[str, dict[tuple[str], int]] = defaultdict(dict)
    for row in weights:
        weight = weight_units(row["weight"])
        if weight > 0:
            scope = scopes[row["scope_key"]]
            key = (row["recipient_id"],)
            scope[key] = scope.get(key, 0) + weight

    out: list[Row] = []
    for line in lines:
        base: Row = {"charge_id": line["charge_id"]}
        scope_keys: Sequence[str] = line["scope_keys"] or ()
        chosen = next((key for key in scope_keys if scopes.get(key)), None)
        if chosen is None:
            out.append(
                base
                | {
                    "recipient_id": None,
                    "scope_key": None,
                    "unallocated_reason": "no_owner_cost_in_period",
                    "billed_cost": line["billed_cost"],
                    "effective_cost": line["effective_cost"],
                    "allocation_ratio": _ratio(UNIT),
                }
            )
            continue
        parts = _split_row(line["billed_cost"], line["effective_cost"], UNIT, scopes[chosen])
        for (recipient_id,), (billed, effective, ratio) in sorted(parts.items()):
            out.append(
                base
                | {
                    "recipient_id": recipient_id,
                    "scope_key": chosen,
                    "unallocated_reason": None,
                    "billed_cost": billed,
                    "effective_cost": effective,
                    "allocation_ratio": ratio,
                }
            )
    return out


def split_shared_workloads(rows: Iterable[Row], shares: Iterable[Row]) -> list[Row]:
    """Split the allocation rows of shared workloads across their consuming projects.

    ``shares`` holds (workload_id, team_id, project_id, weight, share_id) per consumer; weights
    count in whole micro-units (:func:`weight_units`: times 1e6, truncated toward zero) and one
    that is not positive in those units is ignored. A consumer listed twice for a workload (two
    declarations naming the same project) is one consumer with the summed weight and the smallest
    share_id. Every row of a shared workload becomes one row per consumer; the consumers' billed
    cost, effective cost and ratio sum exactly to the row's (largest remainder in 1e-18 units, ties
    by (team_id, project_id)), so each bill line still sums to itself. Unallocated GPU rows of the
    workload become usage / idle rows of the consumers. Rows of other workloads (and shares without
    a workload_id) are not returned.
    A shared workload none of whose consumers weighs at least 1e-6 raises ``ValueError`` (its rows
    would be lost: int_workload_shares leaves such weights out).
    """
    by_workload: dict[str, dict[tuple[str, str], int]] = {}
    ids: dict[tuple[str, tuple[str, str]], str] = {}
    for share in shares:
        if share["workload_id"] is None:
            continue
        consumers = by_workload.setdefault(share["workload_id"], {})
        weight = weight_units(share["weight"])
        if weight > 0:
            key = (share["team_id"], share["project_id"])
            consumers[key] = consumers.get(key, 0) + weight
            share_id, known = share["share_id"], (share["workload_id"], key)
            # the smallest share_id, nulls last (SQL min)
            if (
                known not in ids
                or ids[known] is None
                or (share_id is not None and share_id < ids[known])
            ):
                ids[known] = share_id
    weightless = sorted(w for w, consumers in by_workload.items() if not consumers)
    if weightless:
        raise ValueError(f"shared workloads without a consumer weighing 1e-6 or more: {weightless}")
    out: list[Row] = []
    for row in rows:
        weights = by_workload.get(row.get("workload_id"))
        if not weights:
            continue
        parts = _split_row(
            row["billed_cost"],
            row["effective_cost"],
            to_units(row["allocation_ratio"]),
            weights,
        )
        kind = row["allocation_kind"]
        if kind == "unallocated":
            reason = row.get("unallocated_reason") or ""
            kind = "idle" if reason.startswith("gpu_idle_share_of_") else "usage"
        for key in sorted(weights):
            billed, effective, ratio = parts[key]
            out.append(
                {
                    **row,
                    "team_id": key[0],
                    "project_id": key[1],
                    "allocation_kind": kind,
                    "attribution_method": "shared_workload",
                    "attribution_rule_id": ids[row["workload_id"], key],
                    "attribution_confidence": 1.0,
                    "unallocated_reason": None,
                    "billed_cost": billed,
                    "effective_cost": effective,
                    "allocation_ratio": ratio,
                }
            )
    return out
