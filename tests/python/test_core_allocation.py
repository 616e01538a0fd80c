"""The production allocation core (gpucost.core: gpu_time, idle, storage, node_parts) on Polars
(its engine under dbt-duckdb) and on local PySpark, compared exactly (Decimal money, same rows, same tie-breaks) with the
reference row core (tests/python/reference), whose golden fixtures and hypothesis properties are
in test_allocation.py, test_storage.py and test_node_parts.py.

Seeded fleets that reach every branch (pool bases, complexity weighting, utilised cost, every idle
policy, credits, 18-decimal amounts, lines without telemetry); on PySpark fewer plans (a PySpark
plan costs 10-20 s of building over py4j whatever the data). Set GPUCOST_REQUIRE_SPARK=1
(scripts/test.sh does) to fail rather than skip without pyspark.
"""

from __future__ import annotations

import random
from collections import defaultdict
from decimal import Decimal

import narwhals as nw
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucost.core import gpu_time, idle, node_parts, storage
from gpucost.core.split import MAX_TOTAL_WEIGHT, MONEY, WeightBoundError, money_columns, money_value
from tests.python.core_frames import SCOPE_SCHEMA, collect, rows, table
from tests.python.reference import allocation as reference
from tests.python.reference import node_parts as reference_parts
from tests.python.reference import storage as reference_storage
from tests.python.test_allocation import node_lines_and_usages

D = Decimal

pytestmark = pytest.mark.xdist_group("spark")


LINE_SCHEMA = {
    "charge_id": pa.string(),
    "capacity_gpu_ms": pa.int64(),
    "gpu_allocation_basis": pa.string(),
    "complexity_weighting": pa.bool_(),
}
USAGE_SCHEMA = {
    "charge_id": pa.string(),
    "workload_id": pa.string(),
    "requested_gpu_ms": pa.int64(),
    "used_gpu_ms": pa.int64(),
    "complexity_units": pa.int64(),
}
PRORATE_FIELDS = (
    "charge_id",
    "workload_id",
    "allocation_kind",
    "unallocated_reason",
    "allocation_basis",
    "basis_gpu_ms",
    "used_gpu_ms",
    "billed_cost",
    "effective_cost",
    "allocation_ratio",
    "utilised_cost",
)
PRORATE_MONEY = (*MONEY, "utilised_cost")


def _prorate(engine, lines, usages, basis):
    """The core's prorate of reference inputs: a line's ``allocation_ratio`` (when any line has one)
    and a usage's ``complexity_weight`` (Decimal) cross as the core's columns."""
    money: tuple[str, ...] = ("billed_cost", "effective_cost")
    if any("allocation_ratio" in line for line in lines):
        money += ("allocation_ratio",)
        lines = [{"allocation_ratio": D(1)} | line for line in lines]
    usages = [
        u
        | {
            "complexity_units": None
            if u.get("complexity_weight") is None
            else int(D(str(u["complexity_weight"])) * 1_000_000)
        }
        for u in usages
    ]
    lines_frame = engine(table(lines, LINE_SCHEMA, money))
    usages_frame = engine(table(usages, USAGE_SCHEMA, ()))
    result = gpu_time.prorate_node_lines(lines_frame, usages_frame, basis)
    return collect(result, PRORATE_MONEY)


def _key(row):
    return (row["charge_id"], row["workload_id"] or "", row["allocation_kind"])


def _expected_prorate(lines, usages, basis):
    rows = reference.prorate_node_lines(lines, usages, basis)
    return sorted(({f: r[f] for f in PRORATE_FIELDS} for r in rows), key=_key)


# 8 GPUs for one hour; train holds 4 GPUs all hour, nb 1 GPU half an hour: 3.5 GPU-hours idle
GOLDEN_LINE = {
    "charge_id": "c1",
    "billed_cost": D("98.32"),
    "effective_cost": D("86.5216"),
    "capacity_gpu_ms": 8 * 3_600_000,
}
GOLDEN_USAGES = [
    {"charge_id": "c1", "workload_id": "train", "requested_gpu_ms": 14_400_000, "used_gpu_ms": 10},
    {"charge_id": "c1", "workload_id": "nb", "requested_gpu_ms": 1_800_000, "used_gpu_ms": 0},
]
NO_TELEMETRY_LINE = {
    "charge_id": "c9",
    "billed_cost": D("-12.5"),
    "effective_cost": D("0"),
    "capacity_gpu_ms": 0,
}


def _assert_golden(rows: list[dict]) -> None:
    golden = {r["workload_id"]: r for r in rows if r["charge_id"] == "c1"}
    assert golden["train"]["billed_cost"] == D("49.16")
    assert golden["nb"]["billed_cost"] == D("6.145")
    assert golden[None]["allocation_kind"] == "idle"
    assert golden[None]["billed_cost"] == D("43.015")
    assert golden[None]["allocation_ratio"] == D("0.4375")
    assert sum(r["effective_cost"] for r in golden.values()) == D("86.5216")


def _assert_no_telemetry(rows: list[dict]) -> None:
    rows = [r for r in rows if r["charge_id"] == "c9"]
    assert [(r["allocation_kind"], r["unallocated_reason"], r["billed_cost"]) for r in rows] == [
        ("unallocated", "no_gpu_telemetry", D("-12.5"))
    ]
    assert rows[0]["allocation_ratio"] == D(1)


# These two run on Polars here and on PySpark inside test_prorate_equals_row_core (one plan, not three).
@pytest.mark.parametrize("engine", ["polars"], indirect=True)
def test_prorate_golden_node_hour(engine):
    _assert_golden(_prorate(engine, [GOLDEN_LINE], GOLDEN_USAGES, "requested"))


@pytest.mark.parametrize("engine", ["polars"], indirect=True)
def test_prorate_line_without_telemetry_is_one_unallocated_row(engine):
    _assert_no_telemetry(_prorate(engine, [NO_TELEMETRY_LINE], [], "requested"))


def _random_fleet(seed: int):
    rng = random.Random(seed)
    lines, usages = [], []
    for i in range(25):
        # amounts with up to 18 decimals, credits (negative) and big lines; thirds force remainders
        cents = rng.choice([rng.randrange(-(10**6), 10**9), 10**11 + rng.randrange(10**6)])
        billed = D(cents) / 100 + D(rng.randrange(10**16)) / D(10**18)
        effective = (billed * D(rng.choice(["0.87", "1", "0.333333333333333333"]))).quantize(
            D("1e-18")
        )
        capacity = rng.choice([0, 8 * 3_600_000, 4 * 3_600_000, 7])
        lines.append(
            {
                "charge_id": f"c{i:02d}",
                "billed_cost": billed,
                "effective_cost": effective,
                "capacity_gpu_ms": capacity,
                # a pool's own basis and complexity weighting; a GPU part's share of its line
                "gpu_allocation_basis": rng.choice([None, None, "requested", "used", "max"]),
                "complexity_weighting": rng.choice([None, False, True, True]),
                "allocation_ratio": rng.choice([D(1), D(rng.randrange(1, 10**18)) / D(10**18)]),
            }
        )
        for _ in range(rng.randrange(0, 6)):
            workload = rng.randrange(8)
            usages.append(
                {
                    "charge_id": f"c{i:02d}",
                    "workload_id": f"w{workload}",
                    "requested_gpu_ms": rng.choice([0, 1, 3, rng.randrange(3_600_000 * 3)]),
                    "used_gpu_ms": rng.choice([None, 0, rng.randrange(3_600_000 * 2)]),
                    # a workload class's weight (one per workload, as in the warehouse)
                    "complexity_weight": [None, D("1.5"), D("0.25"), D("3")][workload % 4],
                }
            )
    return lines, usages


# Every basis on Polars. On PySpark the proration runs in test_split_at_the_exact_bound_equals_reference
# (requested basis, utilised cost) and the compute parts' idle in test_spread_idle_equals_reference:
# this fleet's plan (complexity weighting: two more splits) took 66 s there at load 5, 512 s at 20.
@pytest.mark.parametrize(
    ("engine", "basis"),
    [("polars", "requested"), ("polars", "used"), ("polars", "max")],
    indirect=["engine"],
)
@pytest.mark.parametrize("seed", [1])
def test_prorate_equals_reference(engine, seed, basis):
    lines, usages = _random_fleet(seed)
    lines += [GOLDEN_LINE, NO_TELEMETRY_LINE]
    usages += GOLDEN_USAGES
    got = sorted(
        ({f: r[f] for f in PRORATE_FIELDS} for r in _prorate(engine, lines, usages, basis)),
        key=_key,
    )
    assert got == _expected_prorate(lines, usages, basis)
    if basis != "used":  # the golden hour is worked for requested time (max gives the same)
        _assert_golden(got)
    _assert_no_telemetry(got)
    sums = defaultdict(lambda: [D(0), D(0)])
    for row in got:
        sums[row["charge_id"]][0] += row["billed_cost"]
        sums[row["charge_id"]][1] += row["allocation_ratio"]
    assert {c: v for c, v in sums.items()} == {
        line["charge_id"]: [line["billed_cost"], line.get("allocation_ratio", D(1))]
        for line in lines
    }
    # the fleet reaches every branch: pool bases, complexity weighting, utilised cost
    assert {r["allocation_basis"] for r in got} >= {basis, f"{basis}*complexity", "used*complexity"}
    assert any(0 < r["utilised_cost"] < r["billed_cost"] for r in got)


CAP = D("9e18")  # the core's amounts stay below 2**63 whole units


@settings(max_examples=5, deadline=None)  # a plan per example
@given(node_lines_and_usages(), st.sampled_from(["requested", "used", "max"]))
def test_prorate_equals_reference_for_any_lines(data, basis):
    """Hypothesis: any lines (credits, 18 decimals, up to 9e18) and usages, the same rows as the
    reference to the 1e-18 unit, on Polars."""
    lines, usages = data
    lines = [
        line | {m: max(min(line[m], CAP), -CAP) for m in ("billed_cost", "effective_cost")}
        for line in lines
    ]
    got = sorted(
        (
            {f: r[f] for f in PRORATE_FIELDS}
            for r in _prorate(
                lambda t: nw.from_native(pl.from_arrow(t).lazy()), lines, usages, basis
            )
        ),
        key=_key,
    )
    assert got == _expected_prorate(lines, usages, basis)


IDLE_SCHEMA = {"charge_id": pa.string()}
WEIGHT_SCHEMA = {
    "scope_key": pa.string(),
    "workload_id": pa.string(),
    "owner_key": pa.string(),
    "recipient_group": pa.string(),
    "weight": pa.int64(),
}
IDLE_FIELDS = (
    "charge_id",
    "workload_id",
    "recipient_group",
    "recipient",
    "scope_key",
    "idle_policy",
    "idle_reason",
    "billed_cost",
    "effective_cost",
    "allocation_ratio",
)


def _spread_idle(engine, idle_rows, weights, policy):
    scopes = [
        {"charge_id": row["charge_id"], "scope_rank": rank, "scope_key": key}
        for row in idle_rows
        for rank, key in enumerate(row["scope_keys"], start=1)
    ]
    result = idle.spread_idle(
        engine(table(idle_rows, IDLE_SCHEMA, MONEY)),
        engine(table(scopes, SCOPE_SCHEMA, ())),
        engine(table(weights, WEIGHT_SCHEMA, ())),
        policy,
    )
    return collect(result, MONEY)


def _idle_key(row):
    return tuple(str(row[f]) for f in IDLE_FIELDS)


def _random_idle(seed: int):
    rng = random.Random(seed)
    idle_rows, weights = [], []
    for i in range(20):
        billed = D(rng.randrange(-(10**5), 10**8)) / 1000 + D(rng.randrange(10**12)) / D(10**18)
        idle_rows.append(
            {
                "charge_id": f"c{i:02d}",
                "scope_keys": [
                    f"c{i:02d}",
                    f"east/2026-10-0{rng.randrange(1, 5)}",
                ],  # day 4: nobody
                "billed_cost": billed,
                "effective_cost": (billed * D("0.9")).quantize(D("1e-18")),
                "allocation_ratio": D(rng.randrange(1, 10**18)) / D(10**18),
            }
        )
        for _ in range(rng.choice([0, 0, 1, 3, 5])):
            weights.append(
                {
                    "scope_key": f"c{i:02d}",
                    "workload_id": f"w{rng.randrange(6)}",
                    "owner_key": rng.choice(["nlp|llm", "vision|det", "platform|gpu"]),
                    "weight": rng.choice([0, 1, 7, rng.randrange(3_600_000 * 8)]),
                }
            )
    for day in (1, 2):
        for w in range(3):
            weights.append(
                {
                    "scope_key": f"east/2026-10-0{day}",
                    "workload_id": f"d{w}",
                    "owner_key": "recsys|rank",
                    "weight": rng.randrange(1, 10**10),
                }
            )
    # day 3's workloads are paid as owner groups (the cluster-day fallback's recipients)
    for owner in ("nlp|llm", "recsys|rank"):
        for method in ("tag", "model"):
            weights.append(
                {
                    "scope_key": "east/2026-10-03",
                    "workload_id": None,
                    "recipient_group": f"{owner}|{method}",
                    "owner_key": owner,
                    "weight": rng.randrange(1, 10**10),
                }
            )
    return idle_rows, weights


# every policy on Polars; on PySpark the even policy only (two stacked splits, the heaviest plan)
@pytest.mark.parametrize(
    ("engine", "policy"),
    [
        ("polars", "proportional"),
        ("polars", "even"),
        ("polars", "platform"),
        ("polars", "visible"),
        ("pyspark", "even"),
    ],
    indirect=["engine"],
)
@pytest.mark.parametrize("seed", [3])
def test_spread_idle_equals_reference(engine, seed, policy):
    idle_rows, weights = _random_idle(seed)
    got = sorted(
        ({f: r[f] for f in IDLE_FIELDS} for r in _spread_idle(engine, idle_rows, weights, policy)),
        key=_idle_key,
    )
    expected = sorted(
        ({f: r[f] for f in IDLE_FIELDS} for r in reference.spread_idle(idle_rows, weights, policy)),
        key=_idle_key,
    )
    assert got == expected
    spreads = policy in ("proportional", "even")
    assert any(r["idle_reason"] == "no_active_workload_in_scope" for r in got) == spreads
    assert any(r["recipient"] == "owner" for r in got) == spreads


# --- the exact split at and beyond its bound --------------------------------------------------


def test_money_columns_round_trip_and_refuse_inexact():
    for amount in ["0", "-0.000000000000000001", "98.32", "-123456789012.345678901234567891"]:
        assert money_value(*money_columns(D(amount))) == D(amount)
    with pytest.raises(ValueError, match="decimal places"):
        money_columns(D("0.0000000000000000001"))


def test_split_at_the_exact_bound_equals_reference(engine):
    """Weights summing to MAX_TOTAL_WEIGHT and amounts near the 64-bit limit: every long-division
    step is then near 2**63 and the engines' double-precision divisions are at their least
    precise; the shares must still equal the reference's to the 1e-18 unit."""
    top = MAX_TOTAL_WEIGHT
    lines = [
        {
            "charge_id": f"edge{i}",
            "billed_cost": billed,
            "effective_cost": -billed,
            "capacity_gpu_ms": top if i == 0 else 0,
        }
        for i, billed in enumerate(
            [D("9000000000000000000.999999999999999999"), D("-7777777777777777777.7"), D("1e-18")]
        )
    ]
    usages = []
    for line in lines:
        for workload, weight in [("a", 1), ("b", top // 3), ("c", top - 1 - top // 3)]:
            usages.append(
                {
                    "charge_id": line["charge_id"],
                    "workload_id": workload,
                    "requested_gpu_ms": weight - (workload == "c" and line["charge_id"] == "edge0"),
                    "used_gpu_ms": weight // 7,
                }
            )
    got = sorted(
        ({f: r[f] for f in PRORATE_FIELDS} for r in _prorate(engine, lines, usages, "requested")),
        key=_key,
    )
    assert got == _expected_prorate(lines, usages, "requested")
    assert any(r["allocation_kind"] == "idle" for r in got)  # edge0: two milliseconds idle


@pytest.mark.parametrize("engine", ["polars"], indirect=True)
def test_split_beyond_the_exact_bound_fails_clearly(engine):
    line = {
        "charge_id": "big",
        "billed_cost": D("1"),
        "effective_cost": D("1"),
        "capacity_gpu_ms": 0,
    }
    usage = {
        "charge_id": "big",
        "workload_id": "w",
        "requested_gpu_ms": MAX_TOTAL_WEIGHT + 1,
        "used_gpu_ms": 0,
    }
    with pytest.raises(WeightBoundError, match="exceeds"):
        _prorate(engine, [line], [usage], "requested")


VOLUME_LINE_SCHEMA = {
    "charge_id": pa.string(),
    "claim_ids": pa.string(),
    "persistent_volume_ids": pa.string(),
    "volume_key": pa.string(),
}
MOUNT_SCHEMA = {"charge_id": pa.string(), "workload_id": pa.string(), "mounted_ms": pa.int64()}
VOLUME_FIELDS = (
    "charge_id",
    "workload_id",
    "allocation_kind",
    "unallocated_reason",
    "allocation_basis",
    "mounted_ms",
    "billed_cost",
    "effective_cost",
    "allocation_ratio",
)


def random_volume_fleet(seed: int, count: int) -> tuple[list[dict], list[dict]]:
    """Volume lines with 18-decimal amounts and credits, claims, volumes, and repeated, empty and
    null mounts (row-core inputs)."""
    lines: list[dict] = []
    mounts: list[dict] = []
    rng = random.Random(seed)
    for i in range(count):
        billed = D(rng.randrange(-(10**5), 10**8)) / 1000 + D(rng.randrange(10**12)) / D(10**18)
        lines.append(
            {
                "charge_id": f"v{i:02d}",
                "billed_cost": billed,
                "effective_cost": (billed * D("0.9")).quantize(D("1e-18")),
                "claim_ids": rng.choice([None, "", "ns/claim-a", "ns/a, ns/b"]),
                "persistent_volume_ids": rng.choice([None, "east/pv-1"]),
                "volume_key": rng.choice([None, "vol-0abc"]),
            }
        )
        for _ in range(rng.choice([0, 0, 1, 2, 4])):
            mounts.append(
                {
                    "charge_id": f"v{i:02d}",
                    "workload_id": rng.choice([None, f"p{rng.randrange(5)}"]),
                    "mounted_ms": rng.choice([0, None, 1, 3, rng.randrange(3_600_000 * 24)]),
                }
            )
    return lines, mounts


@pytest.mark.parametrize("engine", ["polars"], indirect=True)  # PySpark: test_engine_io
def test_volume_lines_equal_reference(engine):
    # golden: 9.00 held 2 h by a and 1 h by b; a disk whose claim no pod held
    lines = [
        {"charge_id": "g1", "billed_cost": D("9"), "effective_cost": D("9")},
        {"charge_id": "g2", "billed_cost": D("4.2"), "effective_cost": D("4"), "claim_ids": "ns/c"},
    ]
    mounts = [
        {"charge_id": "g1", "workload_id": "a", "mounted_ms": 7_200_000},
        {"charge_id": "g1", "workload_id": "b", "mounted_ms": 3_600_000},
    ]
    more_lines, more_mounts = random_volume_fleet(5, 15)
    lines += more_lines
    mounts += more_mounts
    money = ("billed_cost", "effective_cost")
    result = storage.allocate_volume_lines(
        engine(table(lines, VOLUME_LINE_SCHEMA, money)),
        engine(table(mounts, MOUNT_SCHEMA, ())),
    )
    got = sorted(
        ({f: r[f] for f in VOLUME_FIELDS} for r in collect(result, MONEY)),
        key=_key,
    )
    expected = sorted(
        (
            {f: r[f] for f in VOLUME_FIELDS}
            for r in reference_storage.allocate_volume_lines(lines, mounts)
        ),
        key=_key,
    )
    assert got == expected
    golden = {(r["charge_id"], r["workload_id"]): r for r in got if r["charge_id"] < "v"}
    assert golden["g1", "a"]["billed_cost"] == D(6)
    assert golden["g1", "b"]["billed_cost"] == D(3)
    assert golden["g1", "a"]["allocation_ratio"] + golden["g1", "b"]["allocation_ratio"] == D(1)
    assert golden["g2", None]["unallocated_reason"] == "volume_without_pod: ns/c"


# --- node parts ---------------------------------------------------------------------------------

PARTS_LINE_SCHEMA = {"charge_id": pa.string(), "capacity_gpu_ms": pa.int64(), "node": pa.string()}
PARTS_WEIGHT_SCHEMA = {
    "charge_id": pa.string(),
    "resource_part": pa.string(),
    "part_weight": pa.int64(),
    "capacity_units": pa.int64(),
}
PARTS_PART_SCHEMA = PARTS_WEIGHT_SCHEMA
PARTS_USAGE_SCHEMA = {
    "charge_id": pa.string(),
    "resource_part": pa.string(),
    "workload_id": pa.string(),
    "requested_units": pa.int64(),
}
PARTS_OWNER_SCHEMA = {"workload_id": pa.string(), "owner_key": pa.string()}


def _parts_fleet(seed: int):
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


PART_FIELDS = ("charge_id", "resource_part", "part_weight", "capacity_units", *MONEY)


def _split_parts(engine, lines, weights):
    return node_parts.split_line_parts(
        engine(table(lines, PARTS_LINE_SCHEMA, ("billed_cost", "effective_cost"))),
        engine(table(weights, PARTS_WEIGHT_SCHEMA, ())),
    )


def test_parts_and_gpu_cut_equal_reference(engine):
    lines, weights, _, _ = _parts_fleet(11)
    parts = _split_parts(engine, lines, weights)
    expected_parts = reference_parts.split_line_parts(lines, weights)
    assert rows(collect(parts, MONEY), PART_FIELDS) == rows(expected_parts, PART_FIELDS)
    assert {p["resource_part"] for p in expected_parts} == {"gpu", "cpu", "memory"}
    line_frame = engine(table(lines, PARTS_LINE_SCHEMA, ("billed_cost", "effective_cost")))
    cut = node_parts.gpu_part_lines(line_frame, parts)
    fields = ("charge_id", "capacity_gpu_ms", "node", *MONEY)
    expected_cut = reference_parts.gpu_part_lines(lines, expected_parts)
    assert rows(collect(cut, MONEY), fields) == rows(expected_cut, fields)
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
        ("polars", "proportional"),
        ("polars", "even"),
        ("polars", "platform"),
        ("polars", "visible"),
    ],
    indirect=["engine"],
)
def test_compute_parts_equal_reference(engine, policy):
    lines, weights, usages, owners = _parts_fleet(12)
    expected_parts = reference_parts.split_line_parts(lines, weights)
    parts = engine(table(expected_parts, PARTS_PART_SCHEMA, MONEY))
    got = node_parts.prorate_compute_parts(
        parts,
        engine(table(usages, PARTS_USAGE_SCHEMA, ())),
        engine(table(owners, PARTS_OWNER_SCHEMA, ())),
        policy,
    )
    owner_map = {o["workload_id"]: o["owner_key"] for o in owners}
    expected = reference_parts.prorate_compute_parts(expected_parts, usages, owner_map, policy)
    assert rows(collect(got, MONEY), COMPUTE_FIELDS) == rows(expected, COMPUTE_FIELDS)
    kinds = {(r["allocation_kind"], r["recipient"]) for r in expected}
    assert ("usage", None) in kinds and ("unallocated", None) in kinds
    if policy in ("proportional", "even"):
        assert ("idle", "workload") in kinds and ("idle", "unowned") in kinds
