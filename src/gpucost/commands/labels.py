"""Plain words for identifiers: unallocated reasons, system owners, components, budget statuses.

The one place that turns an ``unallocated_reason`` of ``fct_cost_allocation`` into words a
finance reader understands (the attribution methods' words are
``gpucost.commands.statements_labels``, reused, not copied). A reason is built by the
models from a few pieces (see
``int_cost_allocations_placed``): an optional resource prefix (``gpu_usage_of_``,
``cpu_idle_share_of_``, ``volume_claim_of_``...), an optional ``suspense_``, a base reason
(``workload_missing_project_label``...) and, after ``": "``, a detail from the bill (a tag, an
instance type, a volume). :func:`reason_label` reads those pieces; a reason it does not know is
shown as it is, so that a new reason is never hidden behind a wrong word.

System owners are named for what they are where they appear: ``__idle__`` in ``fct_gpu_usage`` is
GPU time nobody requested (before the idle policy spreads it), while ``__idle__`` in
``fct_cost_allocation`` is idle capacity the policy could place on nobody (on the demo month, the
CPU and memory of GPU nodes that no workload requested). :data:`OWNER_LABELS` names them apart.
"""

from __future__ import annotations

IDLE_OWNER = "__idle__"
UNALLOCATED_OWNER = "__unallocated__"

BASE_REASONS: dict[str, str] = {
    "workload_missing_project_label": "workload without a project label",
    "workload_unknown_project_label": "workload whose project label names no known project",
    "rejected_in_review": "workload whose suggested project was rejected in review (owner unknown)",
    "unknown_workload": "workload not found in the cluster inventory",
    "no_gpu_telemetry": "GPU node without GPU telemetry for the hour",
    "no_telemetry": "GPU node without telemetry for the hour",
    "no_owner_cost_in_period": "overhead with no owner's cost in its period to spread it over",
    "no_active_workload_in_scope": "idle time with no workload running around it",
    "shared_cost_share_of_unallocated_cost": "share of overheads (storage, network, support, "
    "tax, credits) following unallocated cost",
    "invalid_charge_period": "bill line with an invalid charge period",
    "gpu_resource_without_telemetry": "GPU instance on the bill without telemetry",
    "unknown_project_tag": "bill line tagged with a project that does not exist",
    "volume_without_pod": "storage volume no pod held during its period",
}
"""Base reasons, each in words (the pieces :func:`reason_label` composes)."""

REASON_PREFIXES: dict[str, str] = {
    "gpu_usage_of_": "GPU time of a {}",
    "gpu_idle_share_of_": "idle GPU share of a {}",
    "cpu_usage_of_": "CPU of a {}",
    "cpu_idle_share_of_": "idle CPU share of a {}",
    "memory_usage_of_": "memory of a {}",
    "memory_idle_share_of_": "idle memory share of a {}",
    "volume_claim_of_": "storage volume held by a {}",
}
SUSPENSE_PREFIX = "suspense_"
NO_REASON = "(no reason given)"

OWNER_LABELS: dict[str, dict[str, str]] = {
    # fct_gpu_usage: the idle row of a GPU node line, before the idle policy spreads it
    "gpu_usage": {
        IDLE_OWNER: "(GPU time nobody requested)",
        UNALLOCATED_OWNER: "(owner unknown)",
    },
    # fct_cost_allocation / fct_chargeback_monthly: idle the policy could place on no workload
    "allocation": {
        IDLE_OWNER: "(idle capacity placed on nobody)",
        UNALLOCATED_OWNER: "(owner unknown)",
    },
}
"""System owners in words, per source: the same id means different things in the two marts."""

COST_COMPONENTS: dict[str, str] = {
    "compute_gpu": "GPU compute",
    "compute_cpu": "CPU compute",
    "compute_memory": "memory",
    "storage": "storage",
    "network": "network",
    "licensing": "licences",
    "energy": "energy",
    "support_tax_fees": "support, tax and fees",
    "credits": "credits, refunds and discounts",
    "other": "other",
}
"""``fct_cost_allocation.cost_component`` (what a bill line bought) in words."""

BUDGET_STATUSES: dict[str, str] = {
    "ok": "ok",
    "forecast_warning": "warning forecast",
    "warning": "warning",
    "forecast_critical": "critical forecast",
    "critical": "critical",
}
"""``rpt_budget_status.status`` in words, least to most severe."""

RESOURCE_PARTS: dict[str, str] = {
    "gpu": "GPU",
    "cpu": "CPU",
    "memory": "memory",
}


def reason_label(reason: str | None) -> str:
    """``unallocated_reason`` in words: ``gpu_usage_of_workload_missing_project_label`` ->
    ``GPU time of a workload without a project label``; ``unknown_project_tag: rag-serch`` ->
    ``bill line tagged with a project that does not exist (rag-serch)``. An unknown reason comes
    back as it is; None is :data:`NO_REASON`."""
    if reason is None or not reason.strip():
        return NO_REASON
    code, _, detail = reason.partition(": ")
    words = _code_label(code.strip())
    if words is None:
        return reason
    return f"{words} ({detail.strip()})" if detail.strip() else words


def _code_label(code: str) -> str | None:
    template = "{}"
    for prefix, form in REASON_PREFIXES.items():
        if code.startswith(prefix):
            template, code = form, code[len(prefix) :]
            break
    suspense = code.startswith(SUSPENSE_PREFIX)
    if suspense:
        code = code[len(SUSPENSE_PREFIX) :]
    base = BASE_REASONS.get(code)
    if base is None:
        return None
    words = template.format(base)
    if suspense:
        words += ", parked in suspense (the model was not sure enough)"
    return words[0].upper() + words[1:]


def owner_label(owner: str | None, source: str = "allocation") -> str:
    """A team or project id, or a system owner in words for ``source`` (see OWNER_LABELS)."""
    if owner is None:
        return "(none)"
    return OWNER_LABELS[source].get(owner, owner)


def resource_part(allocation_basis: str | None) -> str:
    """The resource an idle or usage row of a GPU node line paid for, from its allocation basis
    (``cpu:idle_proportional`` -> ``CPU``; a basis without a part prefix is GPU time)."""
    part, separator, _ = (allocation_basis or "").partition(":")
    return RESOURCE_PARTS.get(part, part) if separator else RESOURCE_PARTS["gpu"]
