"""The hand-built cases whose money is worked out on paper, landed side by side in ONE landing zone and
built once per session for each set of vars they need (instead of one build per test).

The cases are written by their suites (each module's ``write_case``):

- test_shared_gpus: clusters ``k8s`` (MIG, time-sliced, a telemetry gap, duplicated scrapes), ``hpc``
  (Slurm) and ``slow`` (a GPU scraped every 10 minutes), billing account ``acct-gpus``;
- test_allocation_bases: clusters ``bases``, ``bases-used`` and ``bases-cx`` (one node-hour each, the last
  two in a landed pool), billing account ``acct-bases``;
- test_node_parts: cluster ``parts`` (one node-hour in GPU, CPU and memory parts), account ``acct-parts``.

(test_storage's day keeps its own build: it lands an organisation mapping, reference/org_mapping.csv,
and with a mapping landed every project it does not name is unknown, so the other cases' pods would
turn ``unallocated``.)

Why they cannot change each other's money: a GPU node line's idle is spread within the line or, when
nobody used it, within its cluster-day (every case has its own clusters); a pool matches by cluster (and
node); a kube file's duplicate is found within its cluster; none of the cases has a shared line (spread
within its billing account), an organisation mapping or a reservation. Each test reads only its own
resource ids, nodes, clusters or billing account; the data tests of every build cover every case.

Builds: ``hand_warehouse`` under the project's default vars; ``hand_variant_warehouse`` under
``VARIANT_VARS``: idle kept visible (test_allocation_bases), MIG split by memory, time-sliced GPUs split
by measured use (test_shared_gpus) and node lines kept whole on GPU time (test_node_parts). Those vars
touch different cases only: the MIG share changes only the MIG instances of ``k8s``, the shared split
only GPUs with more than one tenant (``ts``, ``tsu``), the node split only nodes with a CPU and memory
capacity (``parts``), and the idle policy only lines with idle GPU time (the ``bases*`` nodes; every
other case's GPUs are held all hour).
"""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime
from pathlib import Path

from tests.python.landing_zones import Warehouse, shared_build, shared_landing

T0 = int(datetime(2026, 10, 1, 10, tzinfo=UTC).timestamp())  # the cases' hour: 10:00-11:00 UTC
MINUTES = list(range(60))
A100 = "NVIDIA A100-SXM4-80GB"
FOCUS_HEADER = [
    "BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
    "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ChargeDescription", "ProviderName",
    "ServiceName", "ServiceCategory", "ResourceId", "BilledCost", "EffectiveCost", "InvoiceId", "Tags",
]  # fmt: skip
CASES = ("test_shared_gpus", "test_allocation_bases", "test_node_parts")
VARIANT_VARS = (
    "--vars",
    "{gpucost_idle_policy: visible, gpucost_mig_share: memory, gpucost_shared_gpu_split: used,"
    " gpucost_node_cost_split: gpu_only}",
)


def series(metric: dict[str, str], minutes: list[int], value: str) -> dict:
    """A Prometheus range series: one sample a minute from ``T0`` at each of ``minutes``."""
    return {"metric": metric, "values": [[T0 + 60 * m, value] for m in minutes]}


def write_prom(path: Path, result: list[dict]) -> None:
    """A Prometheus range-query answer (matrix) holding ``result``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    path.write_text(json.dumps(doc), encoding="utf-8")


def node_hour_line(account: str, resource_id: str, cost: str) -> list[str]:
    """A FOCUS usage line of one GPU node for the hour 10:00-11:00 of 2026-10-01."""
    return [account, "USD", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-10-01T10:00:00Z",
            "2026-10-01T11:00:00Z", "Usage", "GPU node", "AWS", "Amazon EC2", "Compute", resource_id,
            cost, cost, "INV-1", ""]  # fmt: skip


def write_focus(path: Path, rows: list[list[str]]) -> None:
    """A FOCUS 1.0 CSV bill of ``rows`` (in ``FOCUS_HEADER``'s columns)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(FOCUS_HEADER)
        writer.writerows(rows)


def hand_landing(landing: Path) -> Path:
    """Every suite's case (``CASES``), each in its own clusters, bill file and billing account."""
    import importlib

    for name in CASES:
        importlib.import_module(f"tests.python.{name}").write_case(landing)
    return landing


def _landing(tmp_path_factory) -> Path:
    landing, _ = shared_landing(tmp_path_factory, "hand_cases", hand_landing)
    return landing


def hand_warehouse(tmp_path_factory) -> Warehouse:
    """The hand-built cases under the default vars, built once per session (conftest's session fixture
    of the same name returns it)."""
    landing = _landing(tmp_path_factory)
    return shared_build(tmp_path_factory, "hand_cases_build", lambda _: landing)


def hand_variant_warehouse(tmp_path_factory) -> Warehouse:
    """The hand-built cases under ``VARIANT_VARS``, built once per session (with dbt's unit tests, as
    every build under other vars)."""
    landing = _landing(tmp_path_factory)
    return shared_build(
        tmp_path_factory, "hand_cases_variant_build", lambda _: landing, *VARIANT_VARS
    )
