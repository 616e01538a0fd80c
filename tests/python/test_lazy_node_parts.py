"""The lazy node-parts core (gpucost.core.lazy_node_parts) on DuckDB and on local PySpark: identical to
the row core (gpucost.core.node_parts), whose golden cases are in test_node_parts.py.

On PySpark the parts and the GPU cut only: the compute proration is the lazy prorate and idle spread
composed, each compared with the row core on PySpark in test_lazy_allocation.py (the composed plan took
140 s of PySpark planning there, CI time).
"""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

from gpucost.core import lazy_node_parts, node_parts
from gpucost.core.lazy_allocation import MONEY
from tests.python.test_lazy_allocation import _collect, _money_table

D = Decimal

pytestmark = pytest.mark.xdist_group("spark")

LINE_SCHEMA = {"charge_id": pa.string(), "capacity_gpu_ms": pa.int64(), "node": pa.string()}
WEIGHT_SCHEMA = {
    "charge_id": pa.string(),
    "resource_part": pa.string(),
    "part_weight": pa.int64(),
    "capacity_units": pa.int64(),
}
PART_SCHEMA = WEIGHT_SCHEMA
USAGE_SCHEMA = {
    "charge_id": pa.string(),
    "resource_part": pa.string(),
    "workload_id": pa.string(),
    "requested_units": pa.int64(),
}
OWNER_SCHEMA = {"workload_id": pa.string(), "owner_key": pa.string()}


def _fleet(seed: int):
    rng = random.Random(seed)
    lines, weights, usages = [], [], []
    for i in range(12):
        billed = D(rng.randrange(-(10**5), 10**8)) / 1000 + D(rng.randrange(10**12)) / D(10**18)
        charge = f"n{i:02d}"
        lines.append(
            {
                "charge_id": charge,
                "billed_cost": billed,
                "effective_cost": (billed * D("0.87")).quantize(D("1e-18")),
                "capacity_gpu_ms": rng.choice([0, 8 * 3_600_000]),
                "node": f"node-{i % 3}",
            }
        )
        # some lines have no weights (whole GPU part), some only CPU / memory, some all three
        for part in rng.choice([(), ("gpu", "cpu", "memory"), ("cpu", "memory"), ("gpu", "cpu")]):
            weights.append(
                {
                    "charge_id": charge,
                    "resource_part": part,
                    "part_weight": rng.choice([0, 1, rng.randrange(1, 10**8)]),
                    "capacity_units": rng.choice([0, 96 * 3_600_000, 7]),
                }
            )
            for _ in range(rng.choice([0, 1, 3])):
                usages.append(
                    {
                        "charge_id": charge,
                        "resource_part": part,
                        "workload_id": f"w{rng.randrange(6)}",
                        "requested_units": rng.choice([None, 0, 5, rng.randrange(200 * 3_600_000)]),
                    }
                )
    owners = [{"workload_id": f"w{w}", "owner_key": ["nlp|llm", "cv|det"][w % 2]} for w in range(5)]
    return lines, weights, usages, owners


def _rows(rows, fields):
    return sorted(
        ({f: r[f] for f in fields} for r in rows), key=lambda r: tuple(map(str, r.values()))
    )


PART_FIELDS = ("charge_id", "resource_part", "part_weight", "capacity_units", *MONEY)


def _lazy_parts(engine, lines, weights):
    return lazy_node_parts.split_line_parts(
        engine(_money_table(lines, ("billed_cost", "effective_cost"), LINE_SCHEMA)),
        engine(_money_table(weights, (), WEIGHT_SCHEMA)),
    )


def test_parts_and_gpu_cut_equal_row_core(engine):
    lines, weights, _, _ = _fleet(11)
    parts = _lazy_parts(engine, lines, weights)
    expected_parts = node_parts.split_line_parts(lines, weights)
    assert _rows(_collect(parts, MONEY), PART_FIELDS) == _rows(expected_parts, PART_FIELDS)
    assert {p["resource_part"] for p in expected_parts} == {"gpu", "cpu", "memory"}
    line_frame = engine(_money_table(lines, ("billed_cost", "effective_cost"), LINE_SCHEMA))
    cut = lazy_node_parts.gpu_part_lines(line_frame, parts)
    fields = ("charge_id", "capacity_gpu_ms", "node", *MONEY)
    expected_cut = node_parts.gpu_part_lines(lines, expected_parts)
    assert _rows(_collect(cut, MONEY), fields) == _rows(expected_cut, fields)
    assert len(expected_cut) < len(lines)  # a line of CPU and memory only has no GPU part


COMPUTE_FIELDS = (
    "charge_id",
    "resource_part",
    "workload_id",
    "allocation_kind",
    "recipient",
    "allocation_basis",
    "basis_units",
    "unallocated_reason",
    *MONEY,
)


@pytest.mark.parametrize(
    ("engine", "policy"),
    [
        ("duckdb", "proportional"),
        ("duckdb", "even"),
        ("duckdb", "platform"),
        ("duckdb", "visible"),
    ],
    indirect=["engine"],
)
def test_compute_parts_equal_row_core(engine, policy):
    lines, weights, usages, owners = _fleet(12)
    expected_parts = node_parts.split_line_parts(lines, weights)
    parts = engine(_money_table(expected_parts, MONEY, PART_SCHEMA))
    got = lazy_node_parts.prorate_compute_parts(
        parts,
        engine(_money_table(usages, (), USAGE_SCHEMA)),
        engine(_money_table(owners, (), OWNER_SCHEMA)),
        policy,
    )
    owner_map = {o["workload_id"]: o["owner_key"] for o in owners}
    expected = node_parts.prorate_compute_parts(expected_parts, usages, owner_map, policy)
    assert _rows(_collect(got, MONEY), COMPUTE_FIELDS) == _rows(expected, COMPUTE_FIELDS)
    kinds = {(r["allocation_kind"], r["recipient"]) for r in expected}
    assert ("usage", None) in kinds and ("unallocated", None) in kinds
    if policy in ("proportional", "even"):
        assert ("idle", "workload") in kinds and ("idle", "unowned") in kinds
