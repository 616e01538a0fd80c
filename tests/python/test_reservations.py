"""Idle by reservation: teams pay for their reserved-but-unused GPU time first (gpucost.core.allocation).

Golden cases worked on paper, properties (conservation, no holder pays past its unused time), and a
realistic day of SenseTime's Helios Earth cluster (../shared/data/usage, CC BY 4.0): 16 virtual clusters
(teams) with GPU quotas, per-minute running and idle GPUs.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.python.reference.allocation import claim_reserved_idle, spread_idle

D = Decimal
HELIOS = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "usage"
    / "helios_earth_vc_minute_sequence.parquet"
)


def idle_row(charge_id: str, idle_ms: int, billed: str, scope: str = "s") -> dict:
    return {
        "charge_id": charge_id,
        "reservation_scope_key": scope,
        "idle_gpu_ms": idle_ms,
        "billed_cost": D(billed),
        "effective_cost": D(billed),
        "allocation_ratio": D("0.5"),
        "scope_keys": [f"line:{charge_id}"],
    }


def claim(team: str, unused_ms: int, scope: str = "s") -> dict:
    return {
        "reservation_scope_key": scope,
        "reservation_id": f"r-{team}",
        "team_id": team,
        "project_id": f"{team}-reserved",
        "unused_gpu_ms": unused_ms,
    }


def test_unused_reservation_smaller_than_idle_pays_its_part():
    # 10 idle GPU-hours cost 30.00; team a left 2 h of its reservation unused, b 3 h: they pay 6.00 and
    # 9.00, the other 15.00 (5 h) goes on to the idle policy.
    reserved, remaining = claim_reserved_idle(
        [idle_row("L1", 10 * 3_600_000, "30.00")],
        [claim("a", 2 * 3_600_000), claim("b", 3 * 3_600_000)],
    )
    assert [(r["team_id"], r["billed_cost"], r["allocation_ratio"]) for r in reserved] == [
        ("a", D("6.00"), D("0.1")),
        ("b", D("9.00"), D("0.15")),
    ]
    assert [
        (r["charge_id"], r["billed_cost"], r["allocation_ratio"], r["scope_keys"])
        for r in remaining
    ] == [("L1", D("15.00"), D("0.25"), ["line:L1"])]


def test_unused_reservations_larger_than_idle_share_it_by_unused_time():
    # 4 idle GPU-hours (12.00) but 6 h + 2 h unused: all of it goes to the holders, 3 : 1
    reserved, remaining = claim_reserved_idle(
        [idle_row("L1", 4 * 3_600_000, "12.00")],
        [claim("a", 6 * 3_600_000), claim("b", 2 * 3_600_000)],
    )
    assert [(r["team_id"], r["billed_cost"]) for r in reserved] == [
        ("a", D("9.00")),
        ("b", D("3.00")),
    ]
    assert remaining == []


def test_claims_spread_over_every_idle_line_of_the_scope_and_no_further():
    rows = [
        idle_row("L1", 3_600_000, "4.00"),
        idle_row("L2", 3_600_000, "2.00"),
        idle_row("L3", 3_600_000, "9.00", "other"),
    ]
    reserved, remaining = claim_reserved_idle(rows, [claim("a", 3_600_000)])
    # half the scope's idle is a's: half of each of its lines
    assert [(r["charge_id"], r["billed_cost"]) for r in reserved] == [
        ("L1", D("2.00")),
        ("L2", D("1.00")),
    ]
    assert [(r["charge_id"], r["billed_cost"]) for r in remaining] == [
        ("L1", D("2.00")), ("L2", D("1.00")), ("L3", D("9.00")),
    ]  # fmt: skip


def test_without_reservations_nothing_changes():
    rows = [idle_row("L1", 3_600_000, "4.00")]
    assert claim_reserved_idle(rows, []) == ([], rows)
    assert claim_reserved_idle(rows, [claim("a", 0)]) == ([], rows)


def test_remaining_idle_still_spreads_by_policy():
    _, remaining = claim_reserved_idle(
        [idle_row("L1", 4 * 3_600_000, "8.00")], [claim("a", 3_600_000)]
    )
    spread = spread_idle(
        remaining, [{"scope_key": "line:L1", "workload_id": "w", "owner_key": "t|p", "weight": 1}]
    )
    assert [(r["workload_id"], r["billed_cost"]) for r in spread] == [("w", D("6.00"))]


@settings(max_examples=200, deadline=None)
@given(
    idle=st.lists(
        st.tuples(st.integers(0, 10**7), st.decimals(-1000, 1000, places=6), st.sampled_from(["s1", "s2"])),
        min_size=1, max_size=6,
    ),
    unused=st.lists(st.tuples(st.integers(0, 10**7), st.sampled_from(["s1", "s2"])), max_size=5),
)  # fmt: skip
def test_conservation_and_no_holder_pays_past_its_unused_time(idle, unused):
    rows = [idle_row(f"L{i}", ms, str(cost), scope) for i, (ms, cost, scope) in enumerate(idle)]
    claims = [claim(f"t{i}", ms, scope) for i, (ms, scope) in enumerate(unused)]
    reserved, remaining = claim_reserved_idle(rows, claims)
    for row in rows:
        parts = [r for r in reserved + remaining if r["charge_id"] == row["charge_id"]]
        assert sum(p["billed_cost"] for p in parts) == row["billed_cost"]
        assert sum(p["allocation_ratio"] for p in parts) == row["allocation_ratio"]
    idle_ms = {s: sum(ms for ms, _, sc in idle if sc == s) for s in ("s1", "s2")}
    for i, (ms, scope) in enumerate(unused):
        # the GPU time a holder's money stands for never exceeds what it left unused
        share = sum(
            r["allocation_ratio"] for r in reserved if r["team_id"] == f"t{i}"
        )  # ratios are each 0.5 x (claimed part of the line)
        total_ratio = D("0.5") * len([1 for _, _, sc in idle if sc == scope])
        if idle_ms[scope]:
            assert share / total_ratio * idle_ms[scope] <= ms + 1  # 1 ms of rounding


@pytest.fixture(scope="module")
def helios_day() -> list[tuple]:
    if not HELIOS.exists():
        pytest.fail(f"Helios sample missing: {HELIOS} (the repo expects ../shared/data)")
    with duckdb.connect() as con:
        return con.sql(
            "select vc, hour(time) as h, sum(total_gpu_num), sum(running_gpu_num), sum(idle_gpu_num)"
            f" from '{HELIOS}' where time < timestamp '2020-05-02' group by all order by all"
        ).fetchall()


def test_helios_day_each_team_pays_its_own_idle_quota(helios_day):
    """A day of Helios Earth at 0.05 per GPU-minute: every VC's quota is a reservation, so each VC pays
    exactly for its own idle GPU-minutes, and the cluster's idle money is all placed."""
    price = D("0.05")
    hours = sorted({h for _, h, *_ in helios_day})
    rows, claims, expected = [], [], {}
    for h in hours:
        vcs = [r for r in helios_day if r[1] == h]
        idle_minutes = sum(r[4] for r in vcs)
        assert all(
            total == running + idle for _, _, total, running, idle in vcs
        )  # the trace's own identity
        rows.append(
            idle_row(f"h{h:02d}", idle_minutes * 60_000, str(idle_minutes * price), f"earth|{h}")
        )
        for vc, _, _, _, idle in vcs:
            claims.append(claim(vc, idle * 60_000, f"earth|{h}"))
            expected[vc] = expected.get(vc, D(0)) + idle * price
    reserved, remaining = claim_reserved_idle(rows, claims)
    assert remaining == []
    paid: dict[str, Decimal] = {}
    for r in reserved:
        paid[r["team_id"]] = paid.get(r["team_id"], D(0)) + r["billed_cost"]
    assert paid == {vc: cost for vc, cost in expected.items() if cost}
    # vcira (24 GPUs, ~0.5 running) carries its own idle instead of the busy teams
    assert paid["vcira"] > 20 * 60 * 24 * price * D("0.9")


def test_helios_day_half_quotas_leave_the_rest_to_the_policy(helios_day):
    """With reservations of half each VC's GPUs, a VC's unused reservation is max(half - running, 0): the
    holders pay at most that, and the rest of the idle money goes on to the idle policy, nothing lost."""
    price = D("0.05")
    rows, claims, unused_of = [], [], {}
    for h in sorted({h for _, h, *_ in helios_day}):
        vcs = [r for r in helios_day if r[1] == h]
        idle_minutes = sum(r[4] for r in vcs)
        rows.append(
            idle_row(f"h{h:02d}", idle_minutes * 60_000, str(idle_minutes * price), f"earth|{h}")
        )
        for vc, _, total, running, _ in vcs:
            unused = max(total // 2 - running, 0)
            claims.append(claim(vc, unused * 60_000, f"earth|{h}"))
            unused_of[vc] = unused_of.get(vc, 0) + unused
    reserved, remaining = claim_reserved_idle(rows, claims)
    total = sum(r["billed_cost"] for r in rows)
    assert sum(r["billed_cost"] for r in reserved + remaining) == total
    for vc, minutes in unused_of.items():
        paid = sum((r["billed_cost"] for r in reserved if r["team_id"] == vc), D(0))
        assert paid <= minutes * price
    assert D(0) < sum(r["billed_cost"] for r in remaining) < total


# --- end to end: a landed reservation on the generated month --------------------------------------


@pytest.fixture(scope="module")
def reserved_warehouse(generated_month, generated_warehouse, tmp_path_factory):
    import shutil

    from tests.python.conftest import _build

    landing_src, _ = generated_month
    (team,) = generated_warehouse.sql(
        "select team_id from marts.fct_cost_allocation where allocation_kind = 'usage'"
        " and team_id not like '\\_\\_%' escape '\\' group by 1 order by sum(billed_cost) limit 1"
    )[0]
    landing = tmp_path_factory.mktemp("reserved") / "landing"
    shutil.copytree(landing_src, landing)
    reservations = landing / "reference" / "reservations"
    reservations.mkdir(parents=True)
    (reservations / "quotas.csv").write_text(
        "reservation_id,cluster_id,team_id,project_id,valid_from,valid_to,reserved_gpus\n"
        f"r-quota,*,{team},{team}-reserved,2020-01-01,2100-01-01,6\n",
        encoding="utf-8",
    )
    return team, _build(landing, tmp_path_factory.mktemp("reserved_build"))


@pytest.mark.warehouse
def test_a_reservation_pays_its_unused_gpu_time_out_of_idle_first(
    reserved_warehouse, generated_warehouse
):
    team, warehouse = reserved_warehouse
    rows = warehouse.sql(
        "select distinct team_id, project_id, allocation_kind, allocation_basis, attribution_method"
        " from marts.fct_cost_allocation where attribution_rule_id = 'r-quota'"
    )
    assert rows == [(team, f"{team}-reserved", "idle", "idle_reservation", "policy")]
    # expected, line by line: the line's idle money x min(unused, idle) / idle of its scope
    pool = warehouse.sql(
        "select charge_id, reservation_scope_key, idle_gpu_ms, billed_cost from intermediate.int_gpu_idle_pool"
    )
    unused = dict(
        warehouse.sql(
            "select reservation_scope_key, sum(unused_gpu_ms) from intermediate.int_gpu_reservation_claims group by 1"
        )
    )
    idle_of: dict[str, int] = {}
    for _, scope, ms, _ in pool:
        idle_of[scope] = idle_of.get(scope, 0) + ms
    expected = sum(
        (
            cost * min(unused.get(scope, 0), idle_of[scope]) / idle_of[scope]
            for _, scope, ms, cost in pool
            if idle_of[scope]
        ),
        D(0),
    )
    (paid,) = warehouse.sql(
        "select sum(billed_cost) from marts.fct_cost_allocation where attribution_rule_id = 'r-quota'"
    )[0]
    assert expected > 0
    assert abs(paid - expected) <= D("1e-15")
    # the bill is unchanged and still fully placed; other teams' idle went down by what the holder took
    bill = "select sum(billed_cost) from marts.fct_cost_allocation"
    assert warehouse.sql(bill) == generated_warehouse.sql(bill)
    # idle money in all (spread to workloads, kept visible, or taken by the reservation) is unchanged:
    # the holder's part came out of what the others would have carried
    idle = "select sum(billed_cost) from marts.fct_cost_allocation where starts_with(allocation_basis, 'idle_')"
    assert warehouse.sql(idle) == generated_warehouse.sql(idle)
    others = idle + " and attribution_rule_id is distinct from 'r-quota'"
    (before,) = generated_warehouse.sql(others)[0]
    (after,) = warehouse.sql(others)[0]
    assert before - after == paid
    assert warehouse.sql(
        "select count(*) from marts.rpt_reconciliation where billed_residual <> 0"
    ) == [(0,)]
