"""kube-state-metrics series as Prometheus query_range JSON: metrics/kube/**/*.json.

Suites kube_responses (one row per file) and kube_samples (one row per sample); see
gpucost.validation.expectations._prometheus for how the files are flattened.
"""

from __future__ import annotations

from functools import partial

import great_expectations as gx
import great_expectations.expectations as gxe
from great_expectations.expectations.row_conditions import Column

from gpucost.validation.expectations import _prometheus
from gpucost.validation.expectations.base import Source

RESPONSES_SUITE = "kube_responses"
SAMPLES_SUITE = "kube_samples"

NODE_INFO = "kube_node_info"
REQUESTS = "kube_pod_container_resource_requests"

# Frame columns from the series' labels (DuckDB expressions over the label map).
LABELS = {
    "metric_family": (
        "case when labels['__name__'] like 'kube\\_pod\\_%' escape '\\' then 'pod' "
        "when labels['__name__'] like 'kube\\_node\\_%' escape '\\' then 'node' end"
    ),
    "node": "nullif(labels['node'], '')",
    "provider_id": "nullif(labels['provider_id'], '')",
    "namespace": "nullif(labels['namespace'], '')",
    "pod": "nullif(labels['pod'], '')",
    "uid": "nullif(labels['uid'], '')",
    "resource": "nullif(labels['resource'], '')",
    "unit": "nullif(labels['unit'], '')",
}


def build_samples_suite() -> gx.ExpectationSuite:
    metric = Column("metric_name")
    pod_metric = Column("metric_family") == "pod"
    expectations: list[gxe.Expectation] = [
        gxe.ExpectColumnValuesToMatchRegex(
            column="metric_name",
            regex=r"^kube_[a-z0-9_]+$",
            severity="warning",
            meta={"column": "__name__"},
            description="The metric is a kube-state-metrics series (kube_*).",
        ),
        *_prometheus.sample_expectations(),
    ]
    for label in ("node", "provider_id"):
        expectations.append(
            gxe.ExpectColumnValuesToNotBeNull(
                column=label,
                row_condition=metric == NODE_INFO,
                description=(
                    f"{NODE_INFO} has the {label} label (nodes join to bill lines "
                    "through provider_id)."
                ),
            )
        )
    for label in ("namespace", "pod", "uid"):
        expectations.append(
            gxe.ExpectColumnValuesToNotBeNull(
                column=label,
                row_condition=pod_metric,
                description=f"Pod metrics (kube_pod_*) have the {label} label.",
            )
        )
    expectations.append(
        gxe.ExpectColumnValuesToBeBetween(
            column="value_number",
            min_value=0,
            row_condition=metric == REQUESTS,
            meta={"column": f"value of {REQUESTS}"},
            description=f"{REQUESTS} values are not negative.",
        )
    )
    for label in ("resource", "unit"):
        expectations.append(
            gxe.ExpectColumnValuesToNotBeNull(
                column=label,
                row_condition=metric == REQUESTS,
                description=f"{REQUESTS} has the {label} label.",
            )
        )
    return gx.ExpectationSuite(
        name=SAMPLES_SUITE,
        expectations=expectations,
        meta={
            "notes": "One row per kube-state-metrics sample, as read_prometheus_series flattens."
        },
    )


SOURCE = Source(
    name="kube",
    title="kube-state-metrics",
    folder="metrics/kube",
    patterns=("metrics/kube/**/*.json", "metrics/kube/**/*.json.gz"),
    required=False,
    suites=lambda: [_prometheus.responses_suite(RESPONSES_SUITE), build_samples_suite()],
    load=partial(
        _prometheus.load, prefix="kube", labels=LABELS, locate=("node", "namespace", "pod")
    ),
)
