"""The allocation core: golden fixtures per rule and property tests of its invariants."""

from collections import defaultdict
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucost.core.money import from_units
from tests.python.reference.allocation import (
    prorate_node_lines,
    split_shared_workloads,
    spread_idle,
    spread_shared,
    weight_units,
)

D = Decimal


def totals(rows, key="charge_id"):
    out = defaultdict(lambda: [D(0), D(0), D(0)])
    for row in rows:
        acc = out[row[key]]
        acc[0] += row["billed_cost"]
        acc[1] += row["effective_cost"]
        acc[2] += row["allocation_ratio"]
    return out


# --- proration -----------------------------------------------------------------------------------

NODE_HOUR = {
    "charge_id": "c1",
    "billed_cost": D("98.32"),
    "effective_cost": D("86.5216"),
    "capacity_gpu_ms": 8 * 3_600_000,  # 8 GPUs for one hour
}


def test_prorate_golden_requested_basis():
    # train: 4 GPUs all hour; notebook: 1 GPU half an hour; 3.5 GPU-hours idle.
    usages = [
        {
            "charge_id": "c1",
            "workload_id": "train",
            "requested_gpu_ms": 4 * 3_600_000,
            "used_gpu_ms": 10,
        },
        {"charge_id": "c1", "workload_id": "nb", "requested_gpu_ms": 1_800_000, "used_gpu_ms": 0},
    ]
    rows = {row["workload_id"]: row for row in prorate_node_lines([NODE_HOUR], usages)}
    assert rows["train"]["billed_cost"] == D("49.16")  # 4/8 of 98.32
    assert rows["nb"]["billed_cost"] == D("6.145")  # 0.5/8
    assert rows[None]["allocation_kind"] == "idle"
    assert rows[None]["billed_cost"] == D("43.015")  # 3.5/8
    assert rows["train"]["allocation_ratio"] == D("0.5")
    assert rows[None]["allocation_ratio"] == D("0.4375")
    assert totals(rows.values())["c1"] == [D("98.32"), D("86.5216"), D(1)]


def test_prorate_used_and_max_basis():
    usages = [
        {"charge_id": "c1", "workload_id": "a", "requested_gpu_ms": 100, "used_gpu_ms": 300},
        {"charge_id": "c1", "workload_id": "b", "requested_gpu_ms": 300, "used_gpu_ms": 100},
    ]
    line = NODE_HOUR | {"capacity_gpu_ms": 0}
    used = {r["workload_id"]: r["basis_gpu_ms"] for r in prorate_node_lines([line], usages, "used")}
    assert used == {"a": 300, "b": 100}
    most = {r["workload_id"]: r["basis_gpu_ms"] for r in prorate_node_lines([line], usages, "max")}
    assert most == {"a": 300, "b": 300}
    with pytest.raises(ValueError, match="unknown allocation basis"):
        prorate_node_lines([line], usages, "vibes")


def test_prorate_overbooked_node_has_no_idle_and_still_sums():
    usages = [{"charge_id": "c1", "workload_id": "a", "requested_gpu_ms": 9 * 3_600_000}]
    rows = prorate_node_lines([NODE_HOUR], usages)
    assert [r["allocation_kind"] for r in rows] == ["usage"]
    assert rows[0]["billed_cost"] == D("98.32")


def test_prorate_line_without_telemetry_is_unallocated_not_dropped():
    rows = prorate_node_lines([NODE_HOUR | {"capacity_gpu_ms": 0}], [])
    assert len(rows) == 1
    assert rows[0]["allocation_kind"] == "unallocated"
    assert rows[0]["unallocated_reason"] == "no_gpu_telemetry"
    assert rows[0]["billed_cost"] == D("98.32")


# --- idle ----------------------------------------------------------------------------------------

IDLE = {
    "charge_id": "c1",
    "scope_keys": ["c1", "east/2026-10-01"],
    "billed_cost": D("43.015"),
    "effective_cost": D("37.85320"),
    "allocation_ratio": D("0.4375"),
}
WEIGHTS = [
    {"scope_key": "c1", "workload_id": "train", "owner_key": "nlp|llm", "weight": 3},
    {"scope_key": "c1", "workload_id": "infer", "owner_key": "nlp|llm", "weight": 1},
    {"scope_key": "c1", "workload_id": "nb", "owner_key": "vision|det", "weight": 4},
]


def test_idle_proportional_golden():
    rows = {r["workload_id"]: r for r in spread_idle([IDLE], WEIGHTS, "proportional")}
    assert rows["train"]["billed_cost"] == from_units(43_015 * 10**15 * 3 // 8)
    assert rows["nb"]["allocation_ratio"] == D("0.21875")
    assert totals(rows.values())["c1"] == [IDLE["billed_cost"], IDLE["effective_cost"], D("0.4375")]


def test_idle_even_splits_between_owners_first():
    rows = {r["workload_id"]: r for r in spread_idle([IDLE], WEIGHTS, "even")}
    # two owners -> half each; nlp's half split 3:1 between its workloads
    assert rows["nb"]["allocation_ratio"] == D("0.21875")
    assert rows["train"]["allocation_ratio"] == D("0.1640625")
    assert rows["infer"]["allocation_ratio"] == D("0.0546875")
    assert totals(rows.values())["c1"][0] == IDLE["billed_cost"]


@pytest.mark.parametrize(
    ("policy", "recipient"), [("platform", "platform"), ("visible", "unowned")]
)
def test_idle_platform_and_visible_keep_the_row_whole(policy, recipient):
    (row,) = spread_idle([IDLE], WEIGHTS, policy)
    assert row["recipient"] == recipient
    assert row["billed_cost"] == IDLE["billed_cost"]


def test_idle_falls_back_to_the_wider_scope():
    day = [{"scope_key": "east/2026-10-01", "workload_id": "w", "owner_key": "a|b", "weight": 9}]
    rows = spread_idle([IDLE | {"scope_keys": ["empty", "east/2026-10-01"]}], day, "proportional")
    assert [(r["workload_id"], r["scope_key"], r["billed_cost"]) for r in rows] == [
        ("w", "east/2026-10-01", IDLE["billed_cost"])
    ]


def test_idle_in_a_wide_scope_goes_to_owner_groups_one_row_each():
    # a cluster-day's workloads come as one weight row per owner group (workload_id None)
    day = [
        {
            "scope_key": "east/2026-10-01",
            "workload_id": None,
            "recipient_group": "nlp|llm|tag",
            "owner_key": "nlp|llm",
            "weight": 3,
        },
        {
            "scope_key": "east/2026-10-01",
            "workload_id": None,
            "recipient_group": "vision|det|rule",
            "owner_key": "vision|det",
            "weight": 1,
        },
    ]
    rows = spread_idle([IDLE | {"scope_keys": ["empty", "east/2026-10-01"]}], day, "proportional")
    assert [(r["recipient"], r["workload_id"], r["recipient_group"]) for r in rows] == [
        ("owner", None, "nlp|llm|tag"),
        ("owner", None, "vision|det|rule"),
    ]
    assert rows[0]["allocation_ratio"] == D("0.328125")
    assert totals(rows)["c1"] == [IDLE["billed_cost"], IDLE["effective_cost"], D("0.4375")]
    even = spread_idle([IDLE | {"scope_keys": ["empty", "east/2026-10-01"]}], day, "even")
    assert [r["allocation_ratio"] for r in even] == [D("0.21875"), D("0.21875")]


def test_idle_without_active_workloads_stays_visible_with_reason():
    (row,) = spread_idle([IDLE | {"scope_keys": ["empty"]}], WEIGHTS, "proportional")
    assert row["recipient"] == "unowned"
    assert row["idle_reason"] == "no_active_workload_in_scope"


# --- shared --------------------------------------------------------------------------------------


def test_shared_uses_the_narrowest_scope_with_owners():
    lines = [
        {
            "charge_id": "tax",
            "billed_cost": D("-10.00"),
            "effective_cost": D("-10.00"),
            "scope_keys": ["account:1", "period"],
        },
        {
            "charge_id": "support",
            "billed_cost": D("100"),
            "effective_cost": D("100"),
            "scope_keys": ["account:2", "period"],
        },
        {
            "charge_id": "orphan",
            "billed_cost": D("5"),
            "effective_cost": D("5"),
            "scope_keys": ["account:3"],
        },
    ]
    weights = [
        {"scope_key": "account:1", "recipient_id": "nlp|llm", "weight": D("30")},
        {"scope_key": "account:1", "recipient_id": "vision|det", "weight": D("10")},
        {"scope_key": "account:1", "recipient_id": "gone|x", "weight": D("-5")},
        {"scope_key": "period", "recipient_id": "nlp|llm", "weight": D("1")},
    ]
    rows = spread_shared(lines, weights)
    by = {(r["charge_id"], r["recipient_id"]): r for r in rows}
    assert by[("tax", "nlp|llm")]["billed_cost"] == D("-7.5")
    assert by[("tax", "vision|det")]["billed_cost"] == D("-2.5")
    assert ("tax", "gone|x") not in by
    assert by[("support", "nlp|llm")]["scope_key"] == "period"
    assert by[("orphan", None)]["unallocated_reason"] == "no_owner_cost_in_period"
    for charge_id, (billed, effective, ratio) in totals(rows).items():
        line = next(line for line in lines if line["charge_id"] == charge_id)
        assert (billed, effective, ratio) == (line["billed_cost"], line["effective_cost"], 1)


def test_share_weights_count_in_whole_micro_units():
    # times 1e6, truncated toward zero: the production core (gpucost.core.shared) splits by 64-bit totals
    assert [weight_units(w) for w in (None, D("1e-18"), D("0.000000999"), D("0.000001"))] == [
        0,
        0,
        0,
        1,
    ]
    assert weight_units(D("30.1234567")) == 30_123_456
    assert weight_units(3) == weight_units(D(3)) == 3_000_000
    assert weight_units(D("-0.0000015")) == -1
    lines = [{"charge_id": "s", "billed_cost": D(4), "effective_cost": D(4), "scope_keys": ["a"]}]
    weights = [
        {"scope_key": "a", "recipient_id": "x|1", "weight": D("3.0000009")},  # counts as 3
        {"scope_key": "a", "recipient_id": "y|2", "weight": D("1")},
        {"scope_key": "a", "recipient_id": "z|3", "weight": D("0.0000009")},  # below 1e-6: ignored
    ]
    rows = {r["recipient_id"]: r["billed_cost"] for r in spread_shared(lines, weights)}
    assert rows == {"x|1": D(3), "y|2": D(1)}
    # a scope whose weights are all below 1e-6 has no owner: the wider scope (or none) takes it
    only_tiny = [{"scope_key": "a", "recipient_id": "z|3", "weight": D("0.0000009")}]
    (row,) = spread_shared(lines, only_tiny)
    assert row["unallocated_reason"] == "no_owner_cost_in_period"


def _share(project, weight, share_id="s", workload="w"):
    return {
        "workload_id": workload,
        "team_id": "nlp",
        "project_id": project,
        "weight": D(weight),
        "share_id": share_id,
    }


def test_shared_workload_consumers_sum_and_ignore_weightless_ones():
    row = {
        "charge_id": "c1",
        "workload_id": "w",
        "allocation_kind": "usage",
        "billed_cost": D(8),
        "effective_cost": D(8),
        "allocation_ratio": D(1),
    }
    shares = [
        _share("rag-search", "1", "share-b"),
        _share("rag-search", "2", "share-a"),  # named twice: one consumer, 1 + 2, smallest id
        _share("summarizer", "1"),
        _share("translate-v3", "0.0000009"),  # below 1e-6: no row
    ]
    out = {r["project_id"]: r for r in split_shared_workloads([row], shares)}
    assert {p: (r["billed_cost"], r["attribution_rule_id"]) for p, r in out.items()} == {
        "rag-search": (D(6), "share-a"),
        "summarizer": (D(2), "s"),
    }
    with pytest.raises(ValueError, match=r"1e-6 or more: \['v'\]"):
        split_shared_workloads([row], [_share("x", "0.0000009", workload="v")])


# --- invariants ----------------------------------------------------------------------------------

money = st.decimals(min_value=-(10**19), max_value=10**19, places=18, allow_nan=False)
workload_ids = st.sampled_from([f"w{i}" for i in range(12)])


@st.composite
def node_lines_and_usages(draw):
    n_lines = draw(st.integers(1, 6))
    lines = [
        {
            "charge_id": f"c{i}",
            "billed_cost": draw(money),
            "effective_cost": draw(money),
            "capacity_gpu_ms": draw(st.integers(0, 8 * 3_600_000)),
        }
        for i in range(n_lines)
    ]
    usages = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "charge_id": st.sampled_from([line["charge_id"] for line in lines]),
                    "workload_id": workload_ids,
                    "requested_gpu_ms": st.integers(0, 8 * 3_600_000),
                    "used_gpu_ms": st.integers(0, 8 * 3_600_000),
                }
            ),
            max_size=30,
        )
    )
    return lines, usages


@settings(max_examples=200, deadline=None)  # speed is a benchmark, not a test
@given(node_lines_and_usages(), st.sampled_from(["requested", "used", "max"]), st.randoms())
def test_proration_conserves_each_line_and_is_order_free(data, basis, rnd):
    lines, usages = data
    rows = prorate_node_lines(lines, usages, basis)
    sums = totals(rows)
    for line in lines:
        assert sums[line["charge_id"]] == [line["billed_cost"], line["effective_cost"], 1]
    for row in rows:
        assert D(0) <= row["allocation_ratio"] <= D(1)
        line = next(line for line in lines if line["charge_id"] == row["charge_id"])
        assert row["billed_cost"] * line["billed_cost"] >= 0  # no negative share of a positive cost
    shuffled = usages[:]
    rnd.shuffle(shuffled)
    key = lambda r: (r["charge_id"], str(r["workload_id"]), r["allocation_kind"])  # noqa: E731
    assert sorted(prorate_node_lines(lines[::-1], shuffled, basis), key=key) == sorted(
        rows, key=key
    )


@settings(max_examples=200, deadline=None)  # speed is a benchmark, not a test
@given(node_lines_and_usages(), st.sampled_from(["proportional", "even", "platform", "visible"]))
def test_idle_spreading_conserves_each_idle_row(data, policy):
    lines, usages = data
    prorated = prorate_node_lines(lines, usages)
    idle = [
        r | {"scope_keys": [r["charge_id"]]} for r in prorated if r["allocation_kind"] == "idle"
    ]
    weights = [
        {
            "scope_key": r["charge_id"],
            "workload_id": r["workload_id"],
            "owner_key": "o" + r["workload_id"][-1],
            "weight": r["basis_gpu_ms"],
        }
        for r in prorated
        if r["allocation_kind"] == "usage"
    ]
    spread = spread_idle(idle, weights, policy)
    sums = totals(spread)
    for row in idle:
        assert sums[row["charge_id"]] == [
            row["billed_cost"],
            row["effective_cost"],
            row["allocation_ratio"],
        ]
    for row in spread:
        assert D(0) <= row["allocation_ratio"] <= D(1)


@settings(max_examples=200, deadline=None)  # speed is a benchmark, not a test
@given(
    st.lists(money, min_size=1, max_size=8),
    st.dictionaries(st.sampled_from(["a|1", "b|2", "c|3", "d|4"]), money, max_size=4),
)
def test_shared_spreading_conserves_each_line(amounts, owner_costs):
    lines = [
        {"charge_id": f"s{i}", "billed_cost": a, "effective_cost": a, "scope_keys": ["p"]}
        for i, a in enumerate(amounts)
    ]
    weights = [{"scope_key": "p", "recipient_id": k, "weight": v} for k, v in owner_costs.items()]
    rows = spread_shared(lines, weights)
    sums = totals(rows)
    for line in lines:
        assert sums[line["charge_id"]] == [line["billed_cost"], line["effective_cost"], 1]
    for row in rows:  # weights count in whole micro-units: smaller ones are ignored
        assert row["recipient_id"] is None or owner_costs[row["recipient_id"]] >= D("0.000001")


def test_utilised_share_is_an_exact_split_of_the_usage_cost():
    usages = [
        {"charge_id": "c1", "workload_id": "a", "requested_gpu_ms": 3, "used_gpu_ms": 1},
        {"charge_id": "c1", "workload_id": "b", "requested_gpu_ms": 3, "used_gpu_ms": 9},
    ]
    rows = {
        r["workload_id"]: r
        for r in prorate_node_lines([NODE_HOUR | {"capacity_gpu_ms": 6}], usages)
    }
    assert rows["a"]["billed_cost"] == D("49.16")
    assert rows["a"]["utilised_cost"] == D(
        "16.386666666666666667"
    )  # a third, remainder unit to busy
    assert (
        rows["b"]["utilised_cost"] == rows["b"]["billed_cost"]
    )  # used beyond the basis caps at 100 %
