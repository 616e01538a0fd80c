"""Reservations, shared lines and shared workloads of the production core (gpucost.core.idle,
gpucost.core.shared) on Polars (their engine under dbt-duckdb) and on local PySpark, compared exactly with the reference row core
(tests/python/reference; its golden fixtures: test_allocation.py, test_reservations.py).

Each core runs one hand-made set of edge cases together with a seeded random case, compared exactly
(Decimal money, same rows, same tie-breaks), on both engines; the composition the idle model runs,
the bound and the error cases on Polars only (a PySpark plan costs 10-20 s of plan building over
py4j whatever the data). Set GPUCOST_REQUIRE_SPARK=1 (scripts/test.sh does) to fail rather than
skip without pyspark.
"""

from __future__ import annotations

import random
from collections import defaultdict
from decimal import Decimal

import pyarrow as pa
import pytest

from gpucost.core import idle, shared, split
from gpucost.core.split import MONEY
from tests.python.core_frames import SCOPE_SCHEMA, collect, scope_rows, table
from tests.python.core_frames import rows as canonical
from tests.python.reference import allocation as reference

D = Decimal

pytestmark = pytest.mark.xdist_group("spark")


def _amount(rng: random.Random, scale: int = 10**8) -> Decimal:
    """An amount with up to 18 decimals: charges, credits, zero."""
    return rng.choice(
        [
            D(rng.randrange(-(10**5), scale)) / 1000 + D(rng.randrange(10**12)) / D(10**18),
            D(-rng.randrange(1, 10**6)) / 7 + D(0),
            D(0),
        ]
    ).quantize(D("1e-18"))


# --- claim_reserved_idle ------------------------------------------------------------------------

IDLE_ROW_SCHEMA = {
    "charge_id": pa.string(),
    "reservation_scope_key": pa.string(),
    "idle_gpu_ms": pa.int64(),
    "period": pa.string(),  # a pass-through column
}
CLAIM_SCHEMA = {
    "reservation_scope_key": pa.string(),
    "reservation_id": pa.string(),
    "team_id": pa.string(),
    "project_id": pa.string(),
    "unused_gpu_ms": pa.int64(),
}
RESERVED_FIELDS = (
    "charge_id",
    "workload_id",
    "recipient",
    "idle_policy",
    "reservation_id",
    "team_id",
    "project_id",
    "scope_key",
    "idle_reason",
    *MONEY,
)
REMAINING_FIELDS = ("charge_id", "reservation_scope_key", "idle_gpu_ms", "period", *MONEY)
H = 3_600_000


def _idle(charge_id, scope, idle_ms, billed, effective=None, ratio="0.5"):
    return {
        "charge_id": charge_id,
        "reservation_scope_key": scope,
        "idle_gpu_ms": idle_ms,
        "period": f"p-{charge_id}",
        "billed_cost": D(billed),
        "effective_cost": D(billed if effective is None else effective),
        "allocation_ratio": D(ratio),
        "scope_keys": [f"line:{charge_id}", f"day:{scope}"],
    }


def _claim(scope, reservation, team, unused_ms, project=None):
    return {
        "reservation_scope_key": scope,
        "reservation_id": reservation,
        "team_id": team,
        "project_id": project if project is not None else f"{team}-reserved",
        "unused_gpu_ms": unused_ms,
    }


def _claim_edges():
    idle_rows = [
        # golden (test_reservations): 10 idle h cost 30.00; a left 2 h unused, b 3 h: 6.00, 9.00
        _idle("g1", "golden", 10 * H, "30.00"),
        # two holders with equal unused time on odd amounts: the remainder unit goes by the key
        _idle(
            "t1", "tie", 3, "0.000000000000000001", "-0.000000000000000005", "0.000000000000000003"
        ),
        _idle("t2", "tie", 4, "1", "-1", "1"),
        # claims exceed the idle: everything to the holders, no remaining row
        _idle("x1", "exceed", 2 * H, "12.00", "-3.5"),
        _idle("x2", "exceed", H, "-7", "0"),
        # zero and negative idle time in a scope with holders: kept unchanged, nothing reserved
        _idle("z1", "zero", 0, "5"),
        _idle("z2", "zero", -H, "6"),
        _idle("z3", "half_zero", 0, "5"),
        _idle("z4", "half_zero", H, "2"),
        # a scope without holders (one claim with nothing unused)
        _idle("n1", "nobody", H, "4"),
        _idle("n2", "unclaimed", H, "4"),
        # a null scope: the row core keys it by None, and a claim without a scope matches it
        _idle("u1", None, H, "8"),
        # nothing to pay but idle time: the rest would be all zero and is dropped
        _idle("o1", "partial", H, "0", "0", "0"),
        _idle("o2", "partial", H, "3"),
        _idle("o3", "partial", None, "3"),
        # crumbs: I = 10, C = 9; a rest of 1e-18 x 2 A (I - C) / I, rounded half down: 0 up to A = 5
        _idle("k1", "crumbs", 4, "5e-18", "5e-18", "5e-18"),
        _idle("k2", "crumbs", 6, "6e-18", "6e-18", "6e-18"),
        _idle("k3", "crumbs", 0, "6e-18", "6e-18", "6e-18"),
    ]
    claims = [
        _claim("golden", "r-a", "a", 2 * H),
        _claim("golden", "r-b", "b", 3 * H),
        _claim("tie", "r-2", "b", 7),
        _claim("tie", "r-1", "b", 7),
        _claim("tie", "r-1", "a", 7),
        _claim("exceed", "r-a", "a", 6 * H),
        _claim("exceed", "r-a", "a", 2 * H),  # the same holder twice: one holder, summed
        _claim("exceed", "r-c", "c", 3 * H),
        _claim("zero", "r-a", "a", H),
        _claim("half_zero", "r-a", "a", H // 2),
        _claim("nobody", "r-a", "a", 0),
        _claim("nobody", "r-b", "b", -5),
        _claim("nobody", "r-c", "c", None),
        _claim(None, "r-n", "n", H // 4),
        _claim("partial", "r-a", "a", H // 2),
        _claim("partial", "r-p", "p", H // 4),
        _claim("crumbs", "r-a", "a", 9),
        _claim("elsewhere", "r-e", "e", H),  # a scope without idle rows
    ]
    claims[-2]["project_id"] = None  # a holder without a project: repr None in the tie
    return idle_rows, claims


def _random_claims(seed: int):
    rng = random.Random(seed)
    idle_rows, claims = [], []
    scopes = [f"east|{h}" for h in range(5)]
    for i in range(24):
        idle_rows.append(
            _idle(
                f"r{i:02d}",
                rng.choice(scopes),
                rng.choice([0, 1, 7, rng.randrange(8 * H), rng.randrange(H)]),
                _amount(rng),
                _amount(rng),
                D(rng.randrange(0, 10**18)) / D(10**18),
            )
        )
    for _ in range(12):
        claims.append(
            _claim(
                rng.choice(scopes[1:]),  # scope 0 without holders
                f"q{rng.randrange(4)}",
                rng.choice(["nlp", "vision", "recsys"]),
                rng.choice([0, 1, rng.randrange(4 * H), rng.randrange(20 * H)]),
            )
        )
    return idle_rows, claims


def _claim_on(engine, idle_rows, claims):
    reserved, remaining = idle.claim_reserved_idle(
        engine(table(idle_rows, IDLE_ROW_SCHEMA, MONEY)), engine(table(claims, CLAIM_SCHEMA))
    )
    assert remaining.collect_schema().names() == [
        *IDLE_ROW_SCHEMA,
        *split.MONEY_COLUMNS,
    ]
    return collect(reserved, MONEY), collect(remaining, MONEY)


def test_claim_reserved_idle_equals_reference(engine):
    edges, edge_claims = _claim_edges()
    rand, rand_claims = _random_claims(17)
    idle_rows, claims = edges + rand, edge_claims + rand_claims
    reserved, remaining = _claim_on(engine, idle_rows, claims)
    want_reserved, want_remaining = reference.claim_reserved_idle(idle_rows, claims)
    assert canonical(reserved, RESERVED_FIELDS) == canonical(want_reserved, RESERVED_FIELDS)
    assert canonical(remaining, REMAINING_FIELDS) == canonical(want_remaining, REMAINING_FIELDS)
    # the edges behave as worked out
    paid = defaultdict(list)
    for row in reserved:
        paid[row["charge_id"]].append((row["reservation_id"], row["team_id"], row["billed_cost"]))
    left = {row["charge_id"]: row for row in remaining}
    assert sorted(paid["g1"]) == [("r-a", "a", D("6.00")), ("r-b", "b", D("9.00"))]
    assert left["g1"]["billed_cost"] == D("15.00") and left["g1"]["allocation_ratio"] == D("0.25")
    assert "x1" not in left and "x2" not in left and "o1" not in left  # claimed whole / all zero
    assert {"z1", "z2", "z3", "n1", "n2", "o3"} <= set(left) and not paid.keys() & {"z1", "n1"}
    assert left["z1"] == {**left["z1"], "billed_cost": D(5), "allocation_ratio": D("0.5")}
    assert paid["u1"] and paid["o2"] and not paid["o3"]
    assert "k1" not in left and left["k2"]["billed_cost"] == D("1e-18") and "k3" in left
    # every idle row's reserved and remaining parts sum exactly to it
    for row in idle_rows:
        parts = [*paid[row["charge_id"]]]
        rest = left.get(row["charge_id"], {"billed_cost": D(0)})["billed_cost"]
        assert sum((p[2] for p in parts), D(0)) + rest == row["billed_cost"]
    assert sum(len(v) for v in paid.values()) > 20 and len(rand) > 20


IDLE_WEIGHT_SCHEMA = {
    "scope_key": pa.string(),
    "workload_id": pa.string(),
    "owner_key": pa.string(),
    "recipient_group": pa.string(),
    "weight": pa.int64(),
}
# the model's columns (checked below), money compared as Decimal
IDLE_SPREAD_FIELDS = (
    *(c for c in idle.IDLE_SPREAD_COLUMNS if c not in split.MONEY_COLUMNS),
    *MONEY,
)


def idle_case() -> tuple[list[dict], list[dict], list[dict]]:
    """The idle model's inputs (idle rows, reservation claims, idle weights): the seeded random
    claims with the hand-made edges, and weights on line scopes and day scopes."""
    idle_rows, claims = _random_claims(23)
    edges, edge_claims = _claim_edges()
    idle_rows, claims = idle_rows + edges, claims + edge_claims
    rng = random.Random(5)
    weights = [
        {
            "scope_key": rng.choice([f"line:r{i:02d}" for i in range(24)] + ["day:east|1"]),
            "workload_id": f"w{rng.randrange(9)}",
            "owner_key": rng.choice(["nlp|llm", "vision|det"]),
            "weight": rng.choice([0, 1, rng.randrange(8 * H)]),
        }
        for _ in range(40)
    ] + [
        {
            "scope_key": "day:east|2",
            "workload_id": None,
            "recipient_group": "recsys|rank|tag",
            "owner_key": "recsys|rank",
            "weight": 5,
        }
    ]
    return idle_rows, claims, weights


# The model's composition (claim, then idle.spread_idle, tested on PySpark in test_core_allocation).
@pytest.mark.parametrize("engine", ["polars"], indirect=True)
@pytest.mark.parametrize("policy", ["proportional", "even", "visible"])
def test_spread_idle_with_reservations_equals_reference(engine, policy):
    idle_rows, claims, weights = idle_case()
    frame = idle.spread_idle_with_reservations(
        engine(table(idle_rows, IDLE_ROW_SCHEMA, MONEY)),
        engine(table(claims, CLAIM_SCHEMA)),
        engine(table(scope_rows(idle_rows), SCOPE_SCHEMA)),
        engine(table(weights, IDLE_WEIGHT_SCHEMA)),
        policy,
    )
    assert tuple(frame.collect_schema().names()) == idle.IDLE_SPREAD_COLUMNS
    reserved, remaining = reference.claim_reserved_idle(idle_rows, claims)
    expected = reserved + reference.spread_idle(remaining, weights, policy)
    got = collect(frame, MONEY)
    assert canonical(got, IDLE_SPREAD_FIELDS) == canonical(expected, IDLE_SPREAD_FIELDS)
    assert {r["recipient"] for r in got} >= {"reservation"}


# --- spread_shared ------------------------------------------------------------------------------

LINE_SCHEMA = {"charge_id": pa.string()}
SHARED_WEIGHT_SCHEMA = {"scope_key": pa.string(), "recipient_id": pa.string()}
SHARED_FIELDS = ("charge_id", "recipient_id", "scope_key", "unallocated_reason", *MONEY)


def _line(charge_id, billed, scopes, effective=None):
    return {
        "charge_id": charge_id,
        "billed_cost": D(billed),
        "effective_cost": D(billed if effective is None else effective),
        "scope_keys": scopes,
    }


def _shared_edges():
    lines = [
        _line("tax", "-10", ["account:1", "period"]),  # a credit, 3 : 1
        _line("support", "100", ["account:2", "period"]),  # account 2 has no owner: the period
        _line("orphan", "5", ["account:3"]),  # no weight anywhere
        _line("empty", "7.25", []),  # no scope at all
        _line("none", "7.25", None),
        _line("tiny", "1", ["account:tiny", "period"]),  # weights below 1e-6 only: the period
        _line("tie", "0.000000000000000001", ["account:tie"], "-0.000000000000000002"),
        _line("zero", "0", ["account:1"], "0"),
        _line("again", "3", ["period", "account:1"]),  # the first active scope, not the narrowest
    ]
    weights = [
        {"scope_key": "account:1", "recipient_id": "nlp|llm", "weight": D("30")},
        {"scope_key": "account:1", "recipient_id": "vision|det", "weight": D("10.0000009")},
        {"scope_key": "account:1", "recipient_id": "gone|x", "weight": D("-5")},
        {"scope_key": "period", "recipient_id": "nlp|llm", "weight": D("1.000000999999999999")},
        {"scope_key": "period", "recipient_id": "recsys|rank", "weight": D("0.000001")},
        {"scope_key": "period", "recipient_id": "recsys|rank", "weight": D("2")},  # summed
        {"scope_key": "account:tiny", "recipient_id": "nlp|llm", "weight": D("0.000000999")},
        {"scope_key": "account:tiny", "recipient_id": "vision|det", "weight": D("-0.0000001")},
        {"scope_key": "account:tie", "recipient_id": "b|2", "weight": D("4.5")},
        {"scope_key": "account:tie", "recipient_id": "a|1", "weight": D("4.5")},
        {"scope_key": "account:2", "recipient_id": "none|x", "weight": None},
    ]
    return lines, weights


def _random_shared(seed: int):
    rng = random.Random(seed)
    scopes = [f"account:{a}|2026-10" for a in range(4)] + ["period:2026-10"]
    lines = [
        _line(
            f"s{i:02d}",
            _amount(rng, 10**9),
            rng.sample(scopes[:4], rng.choice([0, 1, 1, 2])) + rng.choice([[], [scopes[4]]]),
            _amount(rng, 10**9),
        )
        for i in range(30)
    ]
    weights = [
        {
            "scope_key": rng.choice(scopes[1:]),  # account 0 has nobody
            "recipient_id": f"team{rng.randrange(3)}|proj{rng.randrange(4)}",
            "weight": rng.choice(
                [
                    D(rng.randrange(-(10**20), 10**24)) / D(10**18),  # up to 1e6, 18 decimals
                    D(rng.randrange(1, 5000)) / D(10**9),  # around the micro-unit
                    D(rng.randrange(1, 10**4)),
                ]
            ),
        }
        for _ in range(40)
    ]
    return lines, weights


def _spread_shared_on(engine, lines, weights):
    frame = shared.spread_shared(
        engine(table(lines, LINE_SCHEMA, ("billed_cost", "effective_cost"))),
        engine(table(scope_rows(lines), SCOPE_SCHEMA)),
        engine(table(weights, SHARED_WEIGHT_SCHEMA, ("weight",))),
    )
    return collect(frame, MONEY)


@pytest.mark.parametrize("engine", ["polars"], indirect=True)  # its split and scope as idle's
def test_spread_shared_equals_reference(engine):
    edges, edge_weights = _shared_edges()
    rand, rand_weights = _random_shared(29)
    lines, weights = edges + rand, edge_weights + rand_weights
    got = _spread_shared_on(engine, lines, weights)
    assert canonical(got, SHARED_FIELDS) == canonical(
        reference.spread_shared(lines, weights), SHARED_FIELDS
    )
    by = {(r["charge_id"], r["recipient_id"]): r for r in got}
    # 30 : 10.000000 (the seventh decimal is below the unit)
    assert (by["tax", "nlp|llm"]["billed_cost"], by["tax", "vision|det"]["billed_cost"]) == (
        D("-7.5"),
        D("-2.5"),
    )
    assert ("tax", "gone|x") not in by
    assert by["support", "nlp|llm"]["scope_key"] == "period"
    assert by["tiny", "recsys|rank"]["scope_key"] == "period"
    assert by["again", "nlp|llm"]["scope_key"] == "period"
    for charge_id in ("orphan", "empty", "none"):
        assert by[charge_id, None]["unallocated_reason"] == "no_owner_cost_in_period"
        assert by[charge_id, None]["allocation_ratio"] == D(1)
    # equal weights: the one unit of each amount goes to the smaller key ('a|1')
    assert by["tie", "a|1"]["billed_cost"] == D("1e-18")
    assert by["tie", "b|2"]["effective_cost"] == D("-1e-18")
    sums = defaultdict(lambda: [D(0), D(0)])
    for row in got:
        sums[row["charge_id"]][0] += row["effective_cost"]
        sums[row["charge_id"]][1] += row["allocation_ratio"]
    assert dict(sums) == {line["charge_id"]: [line["effective_cost"], D(1)] for line in lines}
    assert sum(r["unallocated_reason"] is None for r in got) > 40


# --- split_shared_workloads ---------------------------------------------------------------------

PLACED_SCHEMA = {
    "charge_id": pa.string(),
    "workload_id": pa.string(),
    "team_id": pa.string(),
    "project_id": pa.string(),
    "user_id": pa.string(),
    "allocation_kind": pa.string(),
    "allocation_basis": pa.string(),
    "attribution_method": pa.string(),
    "attribution_rule_id": pa.string(),
    "attribution_confidence": pa.float64(),
    "unallocated_reason": pa.string(),
}
PLACED_MONEY = ("allocation_ratio", "billed_cost", "effective_cost")
SHARE_SCHEMA = {
    "workload_id": pa.string(),
    "share_source": pa.string(),
    "share_id": pa.string(),
    "team_id": pa.string(),
    "project_id": pa.string(),
}
PLACED_FIELDS = (*PLACED_SCHEMA, *PLACED_MONEY)


def _placed(charge_id, workload, kind="usage", reason=None, billed="10", ratio="1", **extra):
    return {
        "charge_id": charge_id,
        "workload_id": workload,
        "team_id": "__unallocated__" if kind == "unallocated" else "owner",
        "project_id": "__unallocated__" if kind == "unallocated" else "owner-p",
        "user_id": extra.get("user_id"),
        "allocation_kind": kind,
        "allocation_basis": extra.get("basis", "requested"),
        "attribution_method": "none" if kind == "unallocated" else "pod_label",
        "attribution_rule_id": extra.get("rule"),
        "attribution_confidence": 0.0 if kind == "unallocated" else 0.75,
        "unallocated_reason": reason,
        "allocation_ratio": D(ratio),
        "billed_cost": D(billed),
        "effective_cost": D(extra.get("effective", billed)),
    }


def _share(workload, team, project, weight, share_id="s"):
    return {
        "workload_id": workload,
        "share_source": "declared",
        "share_id": share_id,
        "team_id": team,
        "project_id": project,
        "weight": None if weight is None else D(weight),
    }


def _workload_edges():
    rows = [
        # golden (test_attribution): 2 : 1, an idle share of an unattributed workload
        _placed("c1", "w", "unallocated", "gpu_idle_share_of_workload_missing_project_label",
                "10.000000000000000001", "0.25", effective="8.8"),
        _placed("c2", "w", "unallocated", "no_gpu_telemetry", "-3"),  # a credit: usage
        _placed("c3", "w", "unallocated", None, "1"),
        _placed("c4", "w", "idle", None, "0.000000000000000002", basis="idle_proportional"),
        _placed("c4", "w", "idle", None, "0.000000000000000002", basis="idle_proportional"),
        _placed("c9", "other", billed="1"),  # not shared: not returned
        _placed("c9", None, billed="1"),
        # equal weights, odd units: ties by (team, project)
        _placed("t1", "tie", billed="0.000000000000000001", ratio="0.000000000000000001",
                effective="-0.000000000000000001"),
        # a consumer twice (two declarations), one weighing nothing, one tiny
        _placed("d1", "dup", billed="7", user_id="u1", rule="r"),
        _placed("z1", "zero", billed="0", ratio="0", effective="0"),
    ]  # fmt: skip
    shares = [
        _share("w", "nlp", "rag-search", "2"),
        _share("w", "nlp", "summarizer", "1"),
        _share("tie", "b", "p", "0.5"),
        _share("tie", "a", "q", "0.5"),
        _share("tie", "a", "p", "0.5"),
        _share("dup", "nlp", "rag-search", "1", "share-b"),
        _share("dup", "nlp", "rag-search", "2", "share-a"),
        _share("dup", "nlp", "rag-search", "0.0000001", "share-0"),  # below 1e-6: not counted
        _share("dup", "nlp", "summarizer", "0.0000009", "share-0"),  # ignored: no row
        _share("dup", "vision", "det", "0.000001", "share-c"),  # one micro-unit
        _share("dup", "vision", "seg", "4", None),  # a null share_id
        _share("zero", "nlp", "rag-search", "1"),
        _share("unused", "nlp", "rag-search", "1"),  # a shared workload without rows
        _share(None, "nlp", "rag-search", "1"),  # no workload: ignored (row c9 stays out)
    ]
    return rows, shares


def _random_workloads(seed: int):
    rng = random.Random(seed)
    kinds = [
        ("usage", None),
        ("idle", None),
        ("unallocated", "gpu_idle_share_of_workload_unknown_project_label"),
        ("unallocated", "gpu_usage_of_workload_missing_project_label"),
        ("unallocated", None),
    ]
    rows = []
    for _ in range(40):
        kind, reason = rng.choice(kinds)
        rows.append(
            _placed(
                f"r{rng.randrange(15):02d}",
                f"w{rng.randrange(8)}",
                kind,
                reason,
                _amount(rng),
                D(rng.randrange(0, 10**18 + 1)) / D(10**18),
                effective=_amount(rng),
                basis=rng.choice(["requested", "cpu:requested", "idle_proportional"]),
            )
        )
    shares = [
        _share(
            f"w{w}",
            team,
            f"{team}-{rng.randrange(3)}",
            rng.choice(
                [
                    str(rng.randrange(1, 10)),
                    "0.6",
                    "0.4",
                    "0.3333333",
                    f"0.{rng.randrange(10**11):011d}",
                ]
            ),
            rng.choice(["s1", "s2", "lineage"]),
        )
        for w in range(6)  # w6 and w7 are not shared
        for team in rng.sample(["nlp", "vision", "recsys"], rng.randrange(1, 4))
        for _ in range(rng.choice([1, 1, 2]))
    ]
    return rows, shares


def _split_workloads_on(engine, rows, shares):
    frame = shared.split_shared_workloads(
        engine(table(rows, PLACED_SCHEMA, PLACED_MONEY)),
        engine(table(shares, SHARE_SCHEMA, ("weight",))),
    )
    assert frame.collect_schema().names()[: len(PLACED_SCHEMA)] == list(PLACED_SCHEMA)
    return collect(frame, PLACED_MONEY)


def test_split_shared_workloads_equals_reference(engine):
    edges, edge_shares = _workload_edges()
    rand, rand_shares = _random_workloads(31)
    rows, shares = edges + rand, edge_shares + rand_shares
    got = _split_workloads_on(engine, rows, shares)
    expected = reference.split_shared_workloads(rows, shares)
    assert canonical(got, PLACED_FIELDS) == canonical(expected, PLACED_FIELDS)
    golden = [r for r in got if r["charge_id"] == "c1"]
    assert sorted((r["project_id"], r["allocation_kind"], r["effective_cost"]) for r in golden) == [
        ("rag-search", "idle", D("5.866666666666666667")),
        ("summarizer", "idle", D("2.933333333333333333")),
    ]
    assert {r["allocation_kind"] for r in got if r["charge_id"] in ("c2", "c3")} == {"usage"}
    assert not any(r["workload_id"] in ("other", None, "unused") for r in got)
    assert all(r["attribution_method"] == "shared_workload" for r in got)
    assert all(r["attribution_confidence"] == 1.0 and r["unallocated_reason"] is None for r in got)
    dup = {(r["team_id"], r["project_id"]): r for r in got if r["workload_id"] == "dup"}
    assert set(dup) == {("nlp", "rag-search"), ("vision", "det"), ("vision", "seg")}
    assert dup["nlp", "rag-search"]["attribution_rule_id"] == "share-a"  # 1 + 2 (+ nothing)
    # 7 x 3,000,000 / 7,000,001 (3 : 0.000001 : 4 in micro-units)
    assert dup["nlp", "rag-search"]["billed_cost"] == D("2.999999571428632653")
    assert dup["nlp", "rag-search"]["user_id"] == "u1"
    assert len([r for r in got if r["charge_id"] == "c4"]) == 4  # identical rows both split
    tie = {(r["team_id"], r["project_id"]): r["billed_cost"] for r in got if r["charge_id"] == "t1"}
    assert tie == {("a", "p"): D("1e-18"), ("a", "q"): D(0), ("b", "p"): D(0)}
    assert len(got) > 100


# --- units, bounds and errors -------------------------------------------------------------------


def test_weight_units_equal_reference(engine):
    values = [
        None, D(0), D("1e-18"), D("0.000000999999999999"), D("0.000001"), D("-0.000001"),
        D("-0.0000015"), D("0.6"), D("1.000000999999999999"), D(3), D("123456.789012345678"),
        D("4500000.5"), D("-12.5"),
    ]  # fmt: skip
    frame = engine(
        table([{"i": i, "weight": v} for i, v in enumerate(values)], {"i": pa.int64()}, ("weight",))
    )
    got = frame.select("i", split.weight_units().alias("units")).collect(backend="pyarrow")
    units = dict(zip(*got.to_native().to_pydict().values(), strict=True))
    expected = [max(reference.weight_units(v), 0) for v in values]
    assert [units[i] for i in range(len(values))] == expected
    assert expected[2:8] == [0, 0, 1, 0, 0, 600_000]


@pytest.mark.parametrize("engine", ["polars"], indirect=True)
def test_weightless_shared_workload_fails_in_both_cores(engine):
    rows = [_placed("c1", "w")]
    shares = [_share("w", "nlp", "rag-search", "0.0000009"), _share("w", "nlp", "x", "-1")]
    with pytest.raises(ValueError, match=r"1e-6 or more: \['w'\]"):
        reference.split_shared_workloads(rows, shares)
    with pytest.raises(ValueError, match=r"1e-6 or more: \['w'\]"):
        _split_workloads_on(engine, rows, shares)


@pytest.mark.parametrize("engine", ["polars"], indirect=True)
def test_a_scope_beyond_the_exact_bound_fails_clearly(engine):
    lines = [_line("big", "1", ["s"])]
    weights = [
        {
            "scope_key": "s",
            "recipient_id": "a|1",
            "weight": D(split.MAX_TOTAL_WEIGHT) / 10**6,
        },
        {"scope_key": "s", "recipient_id": "b|2", "weight": D("0.000001")},
    ]
    with pytest.raises(ValueError, match="exceeds"):
        _spread_shared_on(engine, lines, weights)
    # a single weight far beyond it is capped, never wrapped around
    weights = [{"scope_key": "s", "recipient_id": "a|1", "weight": D(10**16)}]
    with pytest.raises(ValueError, match="exceeds"):
        _spread_shared_on(engine, lines, weights)
    # the row core has no bound
    assert reference.spread_shared(lines, weights)[0]["billed_cost"] == D(1)


@pytest.mark.parametrize("engine", ["polars"], indirect=True)
def test_claim_at_the_scope_bound_equals_reference_and_beyond_it_fails(engine):
    """At MAX_SCOPE_IDLE_MS of idle in one scope the row-by-row claimed part is still exact (the
    largest amounts, a claim that is not a round fraction); one millisecond more raises
    WeightBoundError (the dbt model then fails in one line naming itself, test_engine_io)."""
    bound = idle.MAX_SCOPE_IDLE_MS
    big = D("99999999999999999.999999999999999999")
    idle_rows = [
        _idle("b1", "s", bound - 7, big, -big, ratio="1"),
        _idle("b2", "s", 7, D("-0.000000000000000001"), "12345678901234567.890123456789012345"),
    ]
    claims = [_claim("s", "r-a", "a", bound // 3 + 1), _claim("s", "r-b", "b", bound // 7 - 5)]
    reserved, remaining = _claim_on(engine, idle_rows, claims)
    want_reserved, want_remaining = reference.claim_reserved_idle(idle_rows, claims)
    assert canonical(reserved, RESERVED_FIELDS) == canonical(want_reserved, RESERVED_FIELDS)
    assert canonical(remaining, REMAINING_FIELDS) == canonical(want_remaining, REMAINING_FIELDS)
    assert len(reserved) == 4
    over = [{**idle_rows[0], "idle_gpu_ms": bound - 6}, idle_rows[1]]
    with pytest.raises(split.WeightBoundError, match="exceeds the exact split's bound"):
        _claim_on(engine, over, claims)
