"""Plain words for the marts' codes, written once: cost kinds, attribution methods, bases.

The marts speak in codes (``fct_cost_allocation.allocation_kind`` = ``idle``, ``attribution_method``
= ``model``); a statement is read by finance, who should not need the codes' documentation. Every
place that shows a code to a reader takes its words from here: :func:`kind_label`,
:func:`method_label`, :func:`basis_label`. An unknown code is shown as itself, never hidden.
"""

from __future__ import annotations

KINDS = ("direct", "usage", "idle", "shared", "unallocated")
"""fct_cost_allocation.allocation_kind (fct_chargeback_monthly's columns), in statement order."""

KIND_LABELS = {
    "direct": "Direct charges",
    "usage": "Usage-based share",
    "idle": "Idle capacity",
    "shared": "Shared services",
    "unallocated": "Unallocated",
}
"""The short name of each cost kind, as a finance reader says it."""

KIND_DESCRIPTIONS = {
    "direct": "bill lines tagged to the project, charged in full",
    "usage": "the project's share of GPU nodes, by the GPU time, cores and memory its workloads "
    "took, and of the volumes they held",
    "idle": "paid-for GPU time that no workload used, shared out under the idle policy",
    "shared": "untagged overheads (storage, network, support, tax, credits), spread in "
    "proportion to the cost already placed on each owner",
    "unallocated": "money whose project is not known; it stays visible instead of being spread",
}
"""What each cost kind holds, in one phrase."""

METHODS = (
    "bill_tag",
    "pod_label",
    "slurm_account",
    "override",
    "review_rejected",
    "rule",
    "declared_name",
    "model",
    "model_team",
    "cold_start",
    "cold_start_team",
    "suspense",
    "shared_workload",
    "policy",
    "none",
)
"""fct_cost_allocation.attribution_method, from the most declared to the least."""

METHOD_LABELS = {
    "bill_tag": "a project tag on the bill line",
    "pod_label": "the workload's project label (Kubernetes)",
    "slurm_account": "the Slurm job's account",
    "override": "a human correction (seed attribution_overrides)",
    "review_rejected": "rejected in review: not the suggested project, owner unknown (unallocated)",
    "rule": "a declarative attribution rule (seed attribution_rules)",
    "model": "the learned attribution model, at or above the confidence threshold",
    "model_team": "the learned attribution model, sure of the team but not of the project",
    "cold_start": "the workload's names single out a project of the org mapping (cold start)",
    "cold_start_team": "the workload's names single out a team of the org mapping (cold start)",
    "declared_name": "the workload's own name (pod, owner) names a project of the org mapping",
    "suspense": "parked with the suspense owner (model below the confidence threshold)",
    "shared_workload": "a shared workload split by its consumers' weights",
    "policy": "an allocation policy (shared overheads)",
    "none": "not attributed (unallocated)",
}
"""How the owner was known, per attribution method."""

INFERRED_METHODS = ("model", "model_team", "cold_start", "cold_start_team", "declared_name", "rule")
"""Methods whose placement is an inference a team may dispute: the statement's appendix lists the
signals behind each (the model's strongest features, the rule that matched and on what)."""

BASIS_LABELS = {
    "whole_line": "a tagged bill line, charged whole",
    "requested": "GPU time requested (Kubernetes GPU requests x time)",
    "used": "GPU time used (DCGM busy time)",
    "max": "the larger of requested and used GPU time",
    "idle_proportional": "idle GPU time spread in proportion to the workloads' GPU time "
    "(idle policy: proportional)",
    "idle_even": "idle GPU time spread equally per owner (idle policy: even)",
    "idle_platform": "idle GPU time carried by the platform team (idle policy: platform)",
    "idle_visible": "idle GPU time kept visible as __idle__ (idle policy: visible)",
    "shared_by_effective_cost": "spread in proportion to the effective cost already placed on "
    "each owner",
    "volume_claim": "a storage volume, split by the time each workload held its claim",
}
"""The rule that sized a share, per allocation basis (a ``cpu:`` / ``memory:`` prefix is the same
rule applied to the node's CPU or memory part)."""

RESOURCE_BASIS_LABELS = {
    "cpu": {
        "requested": "the node's CPU part, by cores requested x time",
        "idle": "the node's CPU part no workload requested, spread by the idle policy ({policy})",
    },
    "memory": {
        "requested": "the node's memory part, by memory requested x time",
        "idle": "the node's memory part no workload requested, spread by the idle policy "
        "({policy})",
    },
}
"""A GPU node line's CPU and memory parts (``cpu:requested``, ``memory:idle_proportional``): their
basis is always the requested units x time (docs/allocation.md), their idle spread by the policy."""


def kind_label(kind: str) -> str:
    """``Idle capacity``: the short name of a cost kind."""
    return KIND_LABELS.get(kind, kind)


def kind_description(kind: str) -> str:
    return KIND_DESCRIPTIONS.get(kind, kind)


def method_label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def basis_label(basis: str) -> str:
    """The allocation basis in words; ``cpu:requested`` reads "the node's CPU part, by cores
    requested x time"."""
    prefix, _, rule = basis.partition(":")
    labels = RESOURCE_BASIS_LABELS.get(prefix) if rule else None
    if labels is None:
        return BASIS_LABELS.get(basis, basis)
    if rule.startswith("idle_"):
        return labels["idle"].format(policy=rule.removeprefix("idle_"))
    return labels.get(rule, basis)


def method_order(method: str) -> tuple[int, str]:
    """Sort key: the order of :data:`METHODS`, unknown methods last by name (a total order: the
    rows it sorts come from sets)."""
    return (METHODS.index(method) if method in METHODS else len(METHODS), method)
