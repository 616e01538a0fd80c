"""The effective (amortised) ledger of a commitment over its whole term equals what the commitment
was billed over that term, exactly, through allocation.

A 3-month Savings Plan (FOCUS 1.x commitment rows, as in the spec's commitment_discount_purchase /
usage scenarios): a $1,000.00 upfront fee (Purchase, One-Time, billed in October, effective 0), a
$0.50/hour recurring fee billed monthly (Purchase, Recurring, effective 0), and per month the hourly
commitment (upfront amortised over the term's 2,208 hours + recurring) consumed by two teams' tagged
compute usage (Usage, CommitmentDiscountStatus Used: billed 0, effective = the commitment it used) and the
rest unused (CommitmentDiscountStatus Unused: billed 0, effective = the unused commitment, routed as
idle). The amortised upfront is 1000/2208 per hour, a non-terminating fraction: each month gets its
share in 1e-10 units by largest remainder, as the provider's amortised export rounds it."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

# one xdist group with test_native_bills, which reads the same session warehouse (conftest.
# native_warehouse): one worker builds it while the other gets on with other suites, none waits on it
pytestmark = [pytest.mark.warehouse, pytest.mark.xdist_group("native_warehouse")]

COMMITMENT = "arn:aws:savingsplans::123456789012:savingsplan/sp-gpu-3m"
ACCOUNT = "123456789012"
MONTHS = [("2026-10", "2026-11", 744), ("2026-11", "2026-12", 720), ("2026-12", "2027-01", 744)]
UPFRONT = Decimal("1000.00")
RECURRING_PER_HOUR = Decimal("0.50")
UNIT = Decimal("0.0000000001")
# share of each month's commitment used by each team (the rest is unused)
USED_SHARE = {"2026-10": ("0.61", "0.23"), "2026-11": ("0.47", "0.41"), "2026-12": ("0.7", "0.1")}
COLUMNS = [
    "BillingAccountId", "SubAccountId", "InvoiceId", "ProviderName", "InvoiceIssuerName",
    "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart",
    "ChargePeriodEnd", "ChargeCategory", "ChargeFrequency", "ChargeDescription", "ServiceName",
    "ResourceId", "PricingCategory", "CommitmentDiscountId", "CommitmentDiscountType",
    "CommitmentDiscountStatus", "BilledCost", "EffectiveCost", "Tags",
]  # fmt: skip


def _amortised_upfront() -> dict[str, Decimal]:
    """The upfront fee per month in proportion to its hours, largest remainder in 1e-10 units."""
    total_hours = sum(hours for _, _, hours in MONTHS)
    units = int(UPFRONT / UNIT)
    exact = {month: units * hours / total_hours for month, _, hours in MONTHS}
    floor = {month: int(value) for month, value in exact.items()}
    left = units - sum(floor.values())
    for month in sorted(exact, key=lambda m: exact[m] - floor[m], reverse=True)[:left]:
        floor[month] += 1
    return {month: value * UNIT for month, value in floor.items()}


def _row(month: str, end: str, category: str, billed: Decimal, effective: Decimal, **extra) -> dict:
    row = dict.fromkeys(COLUMNS, "")
    row.update(
        {
            "BillingAccountId": ACCOUNT,
            "SubAccountId": ACCOUNT,
            "InvoiceId": f"INV-{month}",
            "ProviderName": "AWS",
            "InvoiceIssuerName": "AWS",
            "BillingCurrency": "USD",
            "BillingPeriodStart": f"{month}-01T00:00:00Z",
            "BillingPeriodEnd": f"{end}-01T00:00:00Z",
            "ChargePeriodStart": f"{month}-01T00:00:00Z",
            "ChargePeriodEnd": f"{end}-01T00:00:00Z",
            "ChargeCategory": category,
            "ServiceName": "Amazon Elastic Compute Cloud",
            "CommitmentDiscountId": COMMITMENT,
            "CommitmentDiscountType": "Savings Plan",
            "BilledCost": format(billed, "f"),
            "EffectiveCost": format(effective, "f"),
        }
    )
    row.update(extra)
    return row


def commitment_term_bill() -> dict[str, list[dict]]:
    amortised = _amortised_upfront()
    bill: dict[str, list[dict]] = {}
    for month, end, hours in MONTHS:
        recurring = RECURRING_PER_HOUR * hours
        commitment = amortised[month] + recurring  # this month's effective commitment
        rows = []
        if month == MONTHS[0][0]:
            rows.append(
                _row(month, end, "Purchase", UPFRONT, Decimal(0), ChargeFrequency="One-Time",
                     ChargeDescription="Savings Plan upfront fee", ResourceId=COMMITMENT,
                     ChargePeriodEnd="2027-01-01T00:00:00Z")
            )  # fmt: skip
        rows.append(
            _row(month, end, "Purchase", recurring, Decimal(0), ChargeFrequency="Recurring",
                 ChargeDescription="Savings Plan recurring fee", ResourceId=COMMITMENT)
        )  # fmt: skip
        used_total = Decimal(0)
        for team, share in zip(("research", "vision"), USED_SHARE[month], strict=True):
            used = (commitment * Decimal(share)).quantize(UNIT)
            used_total += used
            tags = json.dumps({"project_id": f"{team}-gpu", "team_id": team})
            rows.append(
                _row(month, end, "Usage", Decimal(0), used, ChargeFrequency="Usage-Based",
                     ChargeDescription="Compute usage covered by Savings Plan",
                     ResourceId=f"i-{team}", PricingCategory="Committed",
                     CommitmentDiscountStatus="Used", Tags=tags)
            )  # fmt: skip
        rows.append(
            _row(month, end, "Usage", Decimal(0), commitment - used_total,
                 ChargeFrequency="Usage-Based", ChargeDescription="Unused Savings Plan",
                 PricingCategory="Committed", CommitmentDiscountStatus="Unused")
        )  # fmt: skip
        bill[month] = rows
    return bill


def land_commitment_term(landing: Path) -> None:
    """The term's bill, one FOCUS file per month, in billing/focus/commitment_term of a landing zone."""
    for month, rows in commitment_term_bill().items():
        path: Path = landing / "billing" / "focus" / "commitment_term" / month / "focus.csv"
        path.parent.mkdir(parents=True)
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)


@pytest.fixture
def term_warehouse(native_warehouse):
    """The session's warehouse of native bill cases (conftest), where this bill is landed beside
    test_native_bills' cases: its account (123456789012) and commitment are its own, no other case
    bills that account (the proportional idle policy shares unused commitment among the owners of
    the account's cost), and every query below reads this commitment's lines only."""
    return native_warehouse


def test_generated_term_is_a_real_amortisation():
    amortised = _amortised_upfront()
    assert sum(amortised.values()) == UPFRONT
    # 1000/2208 per hour does not terminate: the months' shares are rounded, not even
    assert len({amortised[month] / hours for month, _, hours in MONTHS}) > 1


def test_effective_cost_over_the_term_equals_the_billed_commitment(term_warehouse):
    billed_commitment = UPFRONT + RECURRING_PER_HOUR * sum(hours for _, _, hours in MONTHS)
    assert billed_commitment == Decimal("2104.00")
    per_month = term_warehouse.sql(
        "select strftime(lines.billing_period_start, '%Y-%m'), sum(alloc.billed_cost),"
        " sum(alloc.effective_cost) from marts.fct_cost_allocation as alloc"
        " inner join intermediate.int_bill_line_items as lines on alloc.charge_id = lines.charge_id"
        f" where lines.commitment_discount_id = '{COMMITMENT}' group by 1 order by 1"
    )
    assert [month for month, _, _ in per_month] == ["2026-10", "2026-11", "2026-12"]
    # no single month balances (upfront billed in October, amortised over the term)...
    assert all(billed != effective for _, billed, effective in per_month)
    # ...but the whole term does, exactly, in both ledgers
    assert sum(billed for _, billed, _ in per_month) == billed_commitment
    assert sum(effective for _, _, effective in per_month) == billed_commitment


def test_unused_commitment_is_placed_as_idle_not_dropped(term_warehouse):
    unused = sum(
        Decimal(row["EffectiveCost"])
        for rows in commitment_term_bill().values()
        for row in rows
        if row["CommitmentDiscountStatus"] == "Unused"
    )
    assert unused > 0
    ((idle, teams),) = term_warehouse.sql(
        "select sum(alloc.effective_cost), list(distinct alloc.team_id order by alloc.team_id)"
        " from marts.fct_cost_allocation as alloc"
        " inner join intermediate.int_bill_line_items as lines on alloc.charge_id = lines.charge_id"
        " where lines.commitment_discount_status = 'Unused' and alloc.allocation_kind = 'idle'"
        f" and lines.commitment_discount_id = '{COMMITMENT}'"
    )
    assert idle == unused
    assert teams == ["research", "vision"]  # proportional idle policy: to the owners of the cost
