"""Native billing formats end to end: the real AWS CUR, Azure EA and OCI samples and the FOCUS spec's
commitment examples build and reconcile to exactly 0; every AWS line item type gets the billed and
amortised cost AWS documents; negative lines, credits without a resource, a re-delivered month and a
two-currency bill are all accounted for. One warehouse is built for the whole session (conftest's
native_warehouse, which test_commitment_term's bill shares)."""

from __future__ import annotations

import csv
import json
import shutil
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from tests.python.conftest import NATIVE_CASES_VARS, SHARED_DATA
from tests.python.landing_zones import MODELS_ONLY

# one xdist group with test_commitment_term, which reads the same session warehouse (conftest.
# native_warehouse): one worker builds it while the other gets on with other suites, none waits on it
pytestmark = [pytest.mark.warehouse, pytest.mark.xdist_group("native_warehouse")]

BILLING = SHARED_DATA / "billing"
LEGACY_CUR = BILLING / "aws_legacy_cur_sample_focus_converters.csv"
AZURE_ACTUAL_CAD = BILLING / "azure_ea_actual_sample_focus_converters.csv"
AZURE_ACTUAL = BILLING / "azure_ea_actualcost_small_finops_toolkit.csv"
AZURE_AMORTIZED = BILLING / "azure_ea_amortizedcost_small_finops_toolkit.csv"
OCI = BILLING / "oci_cost_report_sample_focus_converters.csv"
SPEC_EXAMPLES = BILLING / "focus_spec_examples"

# One synthetic CUR line per line item type: (type, unblended, extra columns, expected effective).
# Effective per AWS's amortised-cost rules (CUR user guide, "Understanding Savings Plans / RI" columns).
LINE_ITEM_TYPES = [
    ("Usage", "10.00", {"resourceTags/user:project_id": "llm-pretrain"}, "10.00"),
    ("DiscountedUsage", "0", {"reservation/EffectiveCost": "6.50"}, "6.50"),
    ("SavingsPlanCoveredUsage", "12.00", {"savingsPlan/SavingsPlanEffectiveCost": "7.20"}, "7.20"),
    ("SavingsPlanNegation", "-12.00", {}, "0"),
    (
        "SavingsPlanRecurringFee",
        "10.00",
        {"savingsPlan/TotalCommitmentToDate": "10.00", "savingsPlan/UsedCommitment": "7.20"},
        "2.80",
    ),
    ("SavingsPlanUpfrontFee", "100.00", {}, "0"),
    (
        "RIFee",
        "5.00",
        {
            "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod": "1.25",
            "reservation/UnusedRecurringFee": "0.75",
        },
        "2.00",
    ),
    (
        "Fee",
        "50.00",
        {"reservation/ReservationARN": "arn:aws:ec2:us-east-1:1:reserved-instances/r1"},
        "0",
    ),
    ("Fee", "3.00", {}, "3.00"),
    ("Tax", "2.10", {}, "2.10"),
    ("Credit", "-4.00", {}, "-4.00"),
    ("Refund", "-1.50", {}, "-1.50"),
    ("EdpDiscount", "-0.80", {}, "-0.80"),
    ("BundledDiscount", "-0.20", {}, "-0.20"),
]
_GCP_ROW = {
    "billing_account_id": "01ABCD-234567-89EFGH",
    "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
    "usage_start_time": "2026-10-31 23:00:00 UTC",
    "usage_end_time": "2026-11-01 00:00:00 UTC",
    "project": {"id": "ml-train", "name": "ML Train"},
    "labels": [],
    "credits": [],
    "currency": "USD",
    "invoice": {"month": "202611"},
}
GCP_ROWS = [
    {
        **_GCP_ROW,
        "sku": {"id": "8B3A", "description": "Nvidia Tesla A100 GPU running in Americas"},
        "labels": [{"key": "project_id", "value": "llm-pretrain"}],
        "resource": {"global_name": "//compute.googleapis.com/projects/ml-train/instances/1"},
        "cost": 2.933908,
        "cost_type": "regular",
        "credits": [
            {
                "name": "Committed use discount",
                "amount": -0.880172,
                "type": "COMMITTED_USAGE_DISCOUNT",
            },
            {"name": "Sustained use discount", "amount": -0.1, "type": "SUSTAINED_USAGE_DISCOUNT"},
        ],
    },
    {**_GCP_ROW, "sku": {"id": "", "description": "Tax"}, "cost": 0.21, "cost_type": "tax"},
    {
        **_GCP_ROW,
        "sku": {"id": "", "description": "Rounding"},
        "cost": -0.004,
        "cost_type": "rounding_error",
    },
]
# A second GCP billing account: project labels join the line's tags, resource labels win on a key
GCP_LABEL_ACCOUNT = "02LABEL-000000-PROJECT"
GCP_LABEL_ROWS = [
    {
        **_GCP_ROW,
        "billing_account_id": GCP_LABEL_ACCOUNT,
        "project": {
            "id": "shared-proj",
            "name": "Shared",
            "labels": [{"key": "project_id", "value": "rag-search"}, {"key": "env", "value": "p"}],
        },
        "sku": {"id": "CPU1", "description": "N2 Instance Core running in Americas"},
        "labels": [],
        "cost": 3.0,
        "cost_type": "regular",
    },
    {
        **_GCP_ROW,
        "billing_account_id": GCP_LABEL_ACCOUNT,
        "project": {
            "id": "shared-proj",
            "name": "Shared",
            "labels": [{"key": "project_id", "value": "rag-search"}],
        },
        "sku": {"id": "CPU1", "description": "N2 Instance Core running in Americas"},
        "labels": [{"key": "project_id", "value": "llm-pretrain"}],
        "cost": 4.0,
        "cost_type": "regular",
    },
]
# FOCUS 1.3 / 1.4 provider columns (1.4: no ProviderName, no PublisherName) and owner tags written as
# our guidance says (project-id) and as AWS writes user tags into FOCUS (user:project-id)
FOCUS_NEW_HEADER = (
    "BillingAccountId,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,"
    "ChargePeriodEnd,ChargeCategory,BilledCost,EffectiveCost,{providers},ServiceName,Tags"
)
FOCUS_PERIOD = "2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,2026-10-05T00:00:00Z,2026-10-05T01:00:00Z"
FOCUS_14_ACCOUNT = "FOCUS14-ACCOUNT"
FOCUS_14 = (
    FOCUS_NEW_HEADER.format(providers="ServiceProviderName,HostProviderName")
    + "\n"
    + "\n".join(
        f"{FOCUS_14_ACCOUNT},USD,{FOCUS_PERIOD},Usage,{cost},{cost},Acme Cloud,Acme Host,Storage,"
        + '"'
        + tags.replace('"', '""')
        + '"'
        for cost, tags in (
            ("5.00", '{"user:project-id": "llm-pretrain"}'),
            ("6.00", '{"project-id": "rag-search"}'),
            ("7.00", '{"user:project_id": "llm-pretrain", "project_id": "rag-search"}'),
        )
    )
    + "\n"
)
FOCUS_13_ACCOUNT = "FOCUS13-ACCOUNT"
FOCUS_13 = (
    FOCUS_NEW_HEADER.format(providers="ProviderName,ServiceProviderName")
    + "\n"
    + f"{FOCUS_13_ACCOUNT},USD,{FOCUS_PERIOD},Usage,1.00,1.00,Old Name,Acme Cloud,Storage,\n"
    + f"{FOCUS_13_ACCOUNT},USD,{FOCUS_PERIOD},Usage,2.00,2.00,Old Name,,Storage,\n"
)
CUR_COLUMNS = [
    "identity/LineItemId",
    "bill/InvoiceId",
    "bill/PayerAccountId",
    "bill/BillingPeriodStartDate",
    "bill/BillingPeriodEndDate",
    "lineItem/UsageAccountId",
    "lineItem/LineItemType",
    "lineItem/UsageStartDate",
    "lineItem/UsageEndDate",
    "lineItem/ProductCode",
    "lineItem/ResourceId",
    "lineItem/CurrencyCode",
    "lineItem/UnblendedCost",
    "lineItem/LineItemDescription",
    "reservation/EffectiveCost",
    "reservation/ReservationARN",
    "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod",
    "reservation/UnusedRecurringFee",
    "savingsPlan/SavingsPlanEffectiveCost",
    "savingsPlan/TotalCommitmentToDate",
    "savingsPlan/UsedCommitment",
    "resourceTags/user:project_id",
]


def _cur_row(account: str, line_type: str, cost: str, currency: str = "USD", **extra) -> dict:
    row = dict.fromkeys(CUR_COLUMNS, "")
    row.update(
        {
            "identity/LineItemId": f"{account}-{line_type}-{cost}",
            "bill/InvoiceId": f"INV-{account}",
            "bill/PayerAccountId": account,
            "bill/BillingPeriodStartDate": "2026-10-01T00:00:00Z",
            "bill/BillingPeriodEndDate": "2026-11-01T00:00:00Z",
            "lineItem/UsageAccountId": account,
            "lineItem/LineItemType": line_type,
            "lineItem/UsageStartDate": "2026-10-03T00:00:00Z",
            "lineItem/UsageEndDate": "2026-10-03T01:00:00Z",
            "lineItem/ProductCode": "AmazonEC2",
            "lineItem/ResourceId": "" if line_type in {"Credit", "Tax"} else f"i-{account}",
            "lineItem/CurrencyCode": currency,
            "lineItem/UnblendedCost": cost,
            "lineItem/LineItemDescription": f"{line_type} line",
        }
    )
    row.update(extra)
    return row


def _azure(charge_type: str, pricing: str, cost: str, resource: str = "") -> dict:
    return {
        "BillingAccountId": "mca-555",
        "BillingPeriodStartDate": "2026-10-01",
        "BillingPeriodEndDate": "2026-10-31",
        "InvoiceId": "G012345678",
        "SubscriptionId": "sub-1",
        "Date": "2026-10-05",
        "ChargeType": charge_type,
        "PricingModel": pricing,
        "MeterCategory": "Virtual Machines",
        "ProductName": "NC A100 v4",
        "ResourceId": resource,
        "CostInBillingCurrency": cost,
        "BillingCurrency": "USD",
        "Tags": '{"project_id": "llm-pretrain"}' if resource else "",
    }


VM = "/subscriptions/sub-1/resourcegroups/rg/providers/microsoft.compute/virtualmachines/gpu1"
AZURE_MCA_ACTUAL = [
    _azure("Purchase", "Reservation", "700.00"),
    _azure("Usage", "Reservation", "0", VM),  # covered hours: billed 0 in the actual export
    _azure("Usage", "OnDemand", "12.50", VM),
    _azure("Refund", "OnDemand", "-2.00", VM),
    _azure("Tax", "OnDemand", "8.00"),
    _azure("RoundingAdjustment", "OnDemand", "0.01"),
]
AZURE_MCA_AMORTIZED = [
    _azure("Usage", "Reservation", "18.40", VM),
    _azure("UnusedReservation", "Reservation", "4.60"),
    _azure("Usage", "OnDemand", "12.50", VM),
    _azure("Refund", "OnDemand", "-2.00", VM),
    _azure("Tax", "OnDemand", "8.00"),
    _azure("RoundingAdjustment", "OnDemand", "0.01"),
]


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CUR_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def _write_cur2_parquet(path: Path) -> None:
    """The same line item types as CUR 2.0 (Data Exports) Parquet: snake_case, resource_tags a map."""
    path.parent.mkdir(parents=True, exist_ok=True)
    values = []
    for index, (line_type, cost, extra, _) in enumerate(LINE_ITEM_TYPES):
        values.append(
            "("
            + ", ".join(
                [
                    f"'cur2-{index}'",
                    "'INV-222222222222'",
                    "'222222222222'",
                    "timestamp '2026-10-01 00:00:00'",
                    "timestamp '2026-11-01 00:00:00'",
                    f"'{line_type}'",
                    "timestamp '2026-10-03 00:00:00'",
                    "timestamp '2026-10-03 01:00:00'",
                    "'i-cur2'",
                    "'USD'",
                    f"{cost}::decimal(20, 8)",
                    f"'{extra.get('reservation/EffectiveCost', '')}'",
                    f"'{extra.get('reservation/ReservationARN', '')}'",
                    f"'{extra.get('reservation/UnusedAmortizedUpfrontFeeForBillingPeriod', '')}'",
                    f"'{extra.get('reservation/UnusedRecurringFee', '')}'",
                    f"'{extra.get('savingsPlan/SavingsPlanEffectiveCost', '')}'",
                    f"'{extra.get('savingsPlan/TotalCommitmentToDate', '')}'",
                    f"'{extra.get('savingsPlan/UsedCommitment', '')}'",
                    "map {'user_project_id': 'rag-search', 'aws_created_by': 'x'}"
                    if line_type == "Usage"
                    else "map {'aws_created_by': 'x'}",
                ]
            )
            + ")"
        )
    columns = (
        "identity_line_item_id, bill_invoice_id, bill_payer_account_id, bill_billing_period_start_date,"
        " bill_billing_period_end_date, line_item_line_item_type, line_item_usage_start_date,"
        " line_item_usage_end_date, line_item_resource_id, line_item_currency_code,"
        " line_item_unblended_cost, reservation_effective_cost, reservation_reservation_a_r_n,"
        " reservation_unused_amortized_upfront_fee_for_billing_period,"
        " reservation_unused_recurring_fee, savings_plan_savings_plan_effective_cost,"
        " savings_plan_total_commitment_to_date, savings_plan_used_commitment, resource_tags"
    )
    with duckdb.connect() as con:
        con.sql(
            f"copy (select * from (values {', '.join(values)}) as t({columns}))"
            f" to '{path}' (format parquet)"
        )


def land_native_cases(landing: Path) -> None:
    """The real native samples and this module's synthetic cases (each in an account of its own),
    written into a new landing zone. Built by conftest's session fixture ``native_warehouse`` (with
    test_commitment_term's bill beside them, in its own account)."""
    for sample in (LEGACY_CUR, AZURE_ACTUAL_CAD, AZURE_ACTUAL, AZURE_AMORTIZED, OCI, SPEC_EXAMPLES):
        if not sample.exists():
            pytest.fail(f"real billing sample missing: {sample} (see ../shared/data/README.md)")
    billing = landing / "billing"
    (billing / "aws_cur" / "sample").mkdir(parents=True)
    shutil.copyfile(LEGACY_CUR, billing / "aws_cur" / "sample" / LEGACY_CUR.name)
    (billing / "azure").mkdir()
    for sample in (AZURE_ACTUAL_CAD, AZURE_ACTUAL, AZURE_AMORTIZED):
        shutil.copyfile(sample, billing / "azure" / sample.name)
    (billing / "oci").mkdir()
    shutil.copyfile(OCI, billing / "oci" / OCI.name)
    shutil.copytree(SPEC_EXAMPLES, billing / "focus" / "spec_examples")
    # every line item type, legacy CSV (account 1111...) and CUR 2.0 Parquet (account 2222...)
    _write_csv(
        billing / "aws_cur" / "types" / "types.csv",
        [_cur_row("111111111111", t, cost, **extra) for t, cost, extra, _ in LINE_ITEM_TYPES],
    )
    _write_cur2_parquet(billing / "aws_cur" / "cur2" / "data" / "part-0.parquet")
    # a month delivered twice (account 3333...): the later assembly replaces the earlier one
    _write_csv(
        billing / "aws_cur" / "redelivered" / "20261001-20261101" / "20261102T000000Z" / "cur.csv",
        [_cur_row("333333333333", "Usage", "100.00"), _cur_row("333333333333", "Tax", "8.00")],
    )
    _write_csv(
        billing / "aws_cur" / "redelivered" / "20261001-20261101" / "20261104T000000Z" / "cur.csv",
        [
            _cur_row("333333333333", "Usage", "120.00"),
            _cur_row("333333333333", "Tax", "9.60"),
            _cur_row("333333333333", "Credit", "-5.00"),
        ],
    )
    # a two-currency bill (account 4444...): USD and EUR lines, reconciled and stated apart
    _write_csv(
        billing / "aws_cur" / "two_currencies" / "cur.csv",
        [
            _cur_row("444444444444", "Usage", "40.00", "USD"),
            _cur_row("444444444444", "Usage", "30.00", "EUR"),
            _cur_row("444444444444", "Tax", "5.70", "EUR"),
        ],
    )
    # an Azure MCA actual + amortised month (MCA spelling: CostInBillingCurrency, BillingCurrency,
    # InvoiceId, ISO dates): a reservation purchase, its used and unused hours, a refund, tax and a
    # rounding adjustment
    _write_rows(billing / "azure" / "mca" / "actualcost.csv", AZURE_MCA_ACTUAL)
    _write_rows(billing / "azure" / "mca" / "amortizedcost.csv", AZURE_MCA_AMORTIZED)
    # an exchange rate for the reporting currency (USD): EUR in October 2026 only
    (landing / "reference" / "fx").mkdir(parents=True)
    (landing / "reference" / "fx" / "rates.csv").write_text(
        "from_currency,to_currency,rate_month,rate,rate_source\n"
        "EUR,USD,2026-10,1.0850,ECB reference rate 2026-10-30\n",
        encoding="utf-8",
    )
    # a GCP BigQuery export (JSON lines): a GPU SKU with two nested credits, invoiced in the month
    # after its usage hour; tax and a rounding error
    (billing / "gcp").mkdir()
    (billing / "gcp" / "export.jsonl").write_text(
        "\n".join(json.dumps(row) for row in GCP_ROWS) + "\n", encoding="utf-8"
    )
    with (billing / "gcp" / "labels.jsonl").open("w", encoding="utf-8") as handle:
        handle.write("\n".join(json.dumps(row) for row in GCP_LABEL_ROWS) + "\n")
    (billing / "focus" / "focus_1_4").mkdir(parents=True)
    (billing / "focus" / "focus_1_4" / "export.csv").write_text(FOCUS_14, encoding="utf-8")
    (billing / "focus" / "focus_1_3").mkdir(parents=True)
    (billing / "focus" / "focus_1_3" / "export.csv").write_text(FOCUS_13, encoding="utf-8")


def _read(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def _reconciliation(warehouse, where: str) -> list[tuple]:
    return warehouse.sql(
        "select billing_currency, billed_cost, effective_cost, billed_residual, effective_residual,"
        " superseded_line_count, is_reconciled from marts.rpt_reconciliation where "
        + where
        + " order by billing_currency"
    )


def test_every_provider_reconciles_to_exactly_zero(native_warehouse):
    rows = native_warehouse.sql(
        "select provider_name, count(*), bool_and(is_reconciled), max(abs(billed_residual)),"
        " max(abs(effective_residual)) from marts.rpt_reconciliation group by 1 order by 1"
    )
    providers = {row[0] for row in rows}
    assert {
        "AWS",
        "Microsoft",
        "Oracle",
        "",
    } <= providers  # '' = the spec examples, no ProviderName
    for provider, _, reconciled, billed_residual, effective_residual in rows:
        assert (reconciled, billed_residual, effective_residual) == (True, 0, 0), provider


def test_legacy_cur_sample_totals_match_the_raw_file(native_warehouse):
    rows = _read(LEGACY_CUR)
    billed = sum(Decimal(row["lineItem/UnblendedCost"]) for row in rows)
    result = native_warehouse.sql(
        "select count(*), sum(billed_cost), sum(effective_cost) from intermediate.int_bill_line_items"
        " where source_file like '%aws_legacy_cur_sample%'"
    )
    # Usage and Tax lines only: amortised = unblended
    assert result == [(1281, billed, billed)]
    assert _reconciliation(native_warehouse, "billing_account_id = '123412340534'") == [
        ("USD", billed, billed, 0, 0, 0, True)
    ]


def test_oci_sample_totals_match_the_raw_file(native_warehouse):
    rows = _read(OCI)
    billed = sum(Decimal(row["cost/myCost"]) for row in rows)
    assert _reconciliation(native_warehouse, "provider_name = 'Oracle'") == [
        ("USD", billed, billed, 0, 0, 0, True)
    ]
    tags = native_warehouse.sql(
        "select json_extract_string(tags, '$.\"Oracle-Tags.CreatedBy\"') from"
        " intermediate.int_bill_line_items where source_format = 'oci' and tags_raw is not null limit 1"
    )
    assert tags[0][0].startswith("default/")


def test_azure_actual_and_amortised_combine_into_two_ledgers(native_warehouse):
    actual = _read(AZURE_ACTUAL)
    amortized = _read(AZURE_AMORTIZED)
    billed = sum(Decimal(row["Cost"]) for row in actual)
    commitment = [
        row
        for row in amortized
        if row["PricingModel"] in {"Reservation", "SavingsPlan"} and row["ChargeType"] == "Usage"
    ]
    assert len(commitment) == 2
    purchases = sum(
        Decimal(row["Cost"])
        for row in actual
        if row["ChargeType"] == "Purchase" and row["PricingModel"] == "Reservation"
    )
    effective = billed - purchases + sum(Decimal(row["Cost"]) for row in commitment)
    superseded = len(amortized) - len(commitment)  # on-demand rows the actual export already holds
    assert _reconciliation(native_warehouse, "billing_account_id = '8611537'") == [
        ("USD", billed, effective, 0, 0, superseded, True)
    ]
    reasons = native_warehouse.sql(
        "select distinct quarantine_reason from marts.rpt_quarantine where source_kind = 'billing/azure'"
        " and source_file like '%finops_toolkit%'"
    )
    assert reasons == [("represented_by_actual_export: Usage",)]


def test_azure_ea_cad_sample_and_its_non_json_tags(native_warehouse):
    rows = _read(AZURE_ACTUAL_CAD)
    billed = sum(Decimal(row["CostInBillingCurrency"]) for row in rows)
    assert _reconciliation(native_warehouse, "billing_account_id = '12345678'") == [
        ("CAD", billed, billed, 0, 0, 0, True)
    ]
    tags = native_warehouse.sql(
        "select distinct json_extract_string(tags, '$.tagA') from intermediate.int_bill_line_items"
        " where billing_account_id = '12345678'"
    )
    assert tags == [("valueA",)]  # EA's `"tagA": "valueA",...` (no braces) parsed as JSON


def test_spec_examples_reject_impossible_timestamps_with_a_reason(native_warehouse):
    rejected = native_warehouse.sql(
        "select unallocated_reason, count(*), sum(billed_cost) from marts.fct_cost_allocation"
        " where unallocated_reason like 'invalid_charge_period%' group by 1"
    )
    assert rejected == [
        ("invalid_charge_period: 2023-01-01T20:00:00Z / 2023-02-01T30:00:00Z", 2, Decimal("1.50"))
    ]
    # every cost-and-usage row; the Contract Commitment dataset is another FOCUS dataset, skipped
    lines = sum(
        len(rows)
        for rows in map(_read, SPEC_EXAMPLES.glob("*.csv"))
        if not rows or "ContractCommitmentId" not in rows[0]
    )
    assert native_warehouse.sql(
        "select count(*) from intermediate.int_bill_line_items where source_format = 'focus'"
        " and source_file like '%/spec_examples/%'"
    ) == [(lines,)]


@pytest.mark.parametrize(
    "account", ["111111111111", "222222222222"], ids=["legacy_csv", "cur2_parquet"]
)
def test_each_aws_line_item_type_gets_its_billed_and_amortised_cost(native_warehouse, account):
    got = native_warehouse.sql(
        "select native_charge_type, billed_cost, effective_cost from intermediate.int_bill_line_items"
        f" where billing_account_id = '{account}' order by native_charge_type, billed_cost"
    )
    expected = sorted(
        (line_type, Decimal(cost), Decimal(effective))
        for line_type, cost, _, effective in LINE_ITEM_TYPES
    )
    assert got == expected
    billed = sum(Decimal(cost) for _, cost, _, _ in LINE_ITEM_TYPES)
    effective = sum(Decimal(value) for _, _, _, value in LINE_ITEM_TYPES)
    assert _reconciliation(native_warehouse, f"billing_account_id = '{account}'") == [
        ("USD", billed, effective, 0, 0, 0, True)
    ]
    # billed to the invoice, per invoice id
    assert native_warehouse.sql(
        f"select invoice_id from marts.rpt_reconciliation where billing_account_id = '{account}'"
    ) == [(f"INV-{account}",)]


@pytest.mark.parametrize(
    ("account", "project"), [("111111111111", "llm-pretrain"), ("222222222222", "rag-search")]
)
def test_cur_tags_of_both_versions_place_cost_directly(native_warehouse, account, project):
    assert native_warehouse.sql(
        "select project_id, allocation_kind, billed_cost from marts.fct_cost_allocation"
        f" where billing_account_id = '{account}' and allocation_kind = 'direct'"
    ) == [(project, "direct", Decimal("10.00"))]


def test_negative_lines_and_a_credit_without_resource_are_allocated_not_dropped(native_warehouse):
    rows = native_warehouse.sql(
        "select line.native_charge_type, line.resource_id, sum(alloc.billed_cost)"
        " from intermediate.int_bill_line_items as line"
        " inner join marts.fct_cost_allocation as alloc on line.charge_id = alloc.charge_id"
        " where line.billing_account_id = '111111111111' and line.billed_cost < 0"
        " group by 1, 2 order by 1"
    )
    assert rows == [
        ("BundledDiscount", "i-111111111111", Decimal("-0.20")),
        ("Credit", None, Decimal("-4.00")),
        ("EdpDiscount", "i-111111111111", Decimal("-0.80")),
        ("Refund", "i-111111111111", Decimal("-1.50")),
        ("SavingsPlanNegation", "i-111111111111", Decimal("-12.00")),
    ]


def test_redelivered_month_replaces_the_earlier_delivery_without_double_counting(native_warehouse):
    assert _reconciliation(native_warehouse, "billing_account_id = '333333333333'") == [
        ("USD", Decimal("124.60"), Decimal("124.60"), 0, 0, 2, True)
    ]
    history = native_warehouse.sql(
        "select count(*), min(quarantine_reason) from marts.rpt_quarantine"
        " where source_file like '%20261102T000000Z%'"
    )
    assert history[0][0] == 2
    assert history[0][1].startswith("superseded_by_redelivery: ") and history[0][1].endswith(
        "20261104T000000Z"
    )


def test_two_currency_bill_is_reconciled_and_stated_per_currency(native_warehouse):
    assert _reconciliation(native_warehouse, "billing_account_id = '444444444444'") == [
        ("EUR", Decimal("35.70"), Decimal("35.70"), 0, 0, 0, True),
        ("USD", Decimal("40.00"), Decimal("40.00"), 0, 0, 0, True),
    ]
    mixed = native_warehouse.sql(
        "select count(*) from marts.fct_cost_allocation as alloc"
        " inner join intermediate.int_bill_line_items as line on line.charge_id = alloc.charge_id"
        " where alloc.billing_currency <> line.billing_currency"
    )
    assert mixed == [(0,)]


def test_rebuilding_on_the_same_files_changes_nothing(native_warehouse):
    query = (
        "select md5(string_agg(charge_id || billed_cost || effective_cost || owner, ',' order by"
        " charge_id, owner)) from (select charge_id, billed_cost, effective_cost,"
        " team_id || '/' || project_id || '/' || allocation_kind as owner from marts.fct_cost_allocation)"
    )
    # a copy of the built warehouse, rebuilt (the session's is read by other tests meanwhile)
    rebuilt = native_warehouse.copy("rebuilt")
    # its allocations are compared with the session's build, which ran the data tests
    result = native_warehouse.dbt("build", *NATIVE_CASES_VARS, *MODELS_ONLY, warehouse=rebuilt)
    assert result.returncode == 0, result.stdout[-3000:]
    assert native_warehouse.sql(query, warehouse=rebuilt) == native_warehouse.sql(query)


def test_cost_components_name_what_each_line_bought(native_warehouse):
    got = dict(
        native_warehouse.sql(
            "select line.native_charge_type || ':' || line.billed_cost, min(alloc.cost_component)"
            " from intermediate.int_bill_line_items as line"
            " inner join marts.fct_cost_allocation as alloc on line.charge_id = alloc.charge_id"
            " where line.billing_account_id = '111111111111' group by 1"
        )
    )
    fees = "support_tax_fees"
    expected = {
        "Usage": "compute_cpu",
        "DiscountedUsage": "compute_cpu",
        "SavingsPlanCoveredUsage": "compute_cpu",
        "SavingsPlanNegation": "compute_cpu",
        "SavingsPlanRecurringFee": fees,
        "SavingsPlanUpfrontFee": fees,
        "RIFee": fees,
        "Fee": fees,
        "Tax": fees,
        "Credit": "credits",
        "Refund": "credits",
        "EdpDiscount": "credits",
        "BundledDiscount": "credits",
    }
    assert {key.split(":")[0]: value for key, value in got.items()} == expected
    components = {
        row[0]
        for row in native_warehouse.sql(
            "select distinct cost_component from marts.fct_cost_allocation"
        )
    }
    assert {"storage", "network", "compute_memory", "compute_cpu", "credits"} <= components


def test_gpu_node_lines_are_the_gpu_compute_component(generated_warehouse):
    # a GPU node sells GPU time, and CPU and memory: its line's parts (docs/allocation.md)
    rows = generated_warehouse.sql(
        "select distinct cost_component from marts.fct_cost_allocation where line_class = 'gpu_node'"
        " order by 1"
    )
    assert rows == [("compute_cpu",), ("compute_gpu",), ("compute_memory",)]


def test_gcp_credits_are_lines_of_their_own_and_invoice_month_decides(native_warehouse):
    rows = native_warehouse.sql(
        "select line.native_charge_type, line.billing_period_start, alloc.cost_component,"
        " alloc.allocation_kind, alloc.billed_cost from intermediate.int_bill_line_items as line"
        " inner join marts.fct_cost_allocation as alloc on line.charge_id = alloc.charge_id"
        " where line.source_format = 'gcp' and alloc.allocation_kind = 'direct'"
        f" and line.billing_account_id <> '{GCP_LABEL_ACCOUNT}'"
        " order by alloc.billed_cost"
    )
    november = rows[0][1].isoformat()
    assert {row[1].isoformat() for row in rows} == {november} and november == "2026-11-01"
    assert [(row[0], row[2], row[4]) for row in rows] == [
        ("credit:COMMITTED_USAGE_DISCOUNT", "credits", Decimal("-0.880172")),
        ("credit:SUSTAINED_USAGE_DISCOUNT", "credits", Decimal("-0.1")),
        ("regular", "compute_gpu", Decimal("2.933908")),
    ]
    assert _reconciliation(
        native_warehouse,
        f"provider_name = 'Google Cloud' and billing_account_id <> '{GCP_LABEL_ACCOUNT}'",
    ) == [("USD", Decimal("2.159736"), Decimal("2.159736"), 0, 0, 0, True)]


def test_statements_restated_in_the_reporting_currency_record_the_conversion(native_warehouse):
    rows = native_warehouse.sql(
        "select billing_currency, conversion_status, count(*), sum(billed_cost), min(fx_rate),"
        " sum(reporting_billed_cost), min(fx_rate_source) from marts.rpt_chargeback_reporting_currency"
        " group by 1, 2 order by 1, 2"
    )
    by_currency = {row[0]: row[1:] for row in rows}
    # EUR has a rate for its month: converted exactly, the rate and its source on the row
    status, _, eur_cents, rate, reporting, source = by_currency["EUR"]
    assert (status, eur_cents, rate) == ("converted", Decimal("35.70"), Decimal("1.085"))
    assert reporting == eur_cents * rate and source == "ECB reference rate 2026-10-30"
    # CAD (the Azure EA sample) has none: kept, flagged, never added into USD
    assert by_currency["CAD"][0] == "no_rate" and by_currency["CAD"][4] is None
    assert by_currency["USD"][0] == "same_currency" and by_currency["USD"][3] == 1


def test_azure_mca_commitment_rows_refund_tax_and_rounding(native_warehouse):
    rows = native_warehouse.sql(
        "select native_charge_type, commitment_discount_status, billed_cost, effective_cost,"
        " is_superseded from intermediate.int_bill_line_items where billing_account_id = 'mca-555'"
        " order by is_superseded, native_charge_type, billed_cost, effective_cost"
    )
    current = [row[:4] for row in rows if not row[4]]
    assert current == [
        ("Purchase", None, Decimal("700.00"), Decimal("0")),  # amortised into the usage rows
        ("Refund", None, Decimal("-2.00"), Decimal("-2.00")),
        ("RoundingAdjustment", None, Decimal("0.01"), Decimal("0.01")),
        ("Tax", None, Decimal("8.00"), Decimal("8.00")),
        ("UnusedReservation", "Unused", Decimal("0"), Decimal("4.60")),
        ("Usage", "Used", Decimal("0"), Decimal("18.40")),
        ("Usage", None, Decimal("12.50"), Decimal("12.50")),
    ]
    # billed = the invoice (actual export), effective = the month's amortised view
    assert _reconciliation(native_warehouse, "billing_account_id = 'mca-555'") == [
        ("USD", Decimal("718.51"), Decimal("41.51"), 0, 0, 5, True)
    ]
    assert native_warehouse.sql(
        "select distinct invoice_id from marts.rpt_reconciliation where billing_account_id = 'mca-555'"
    ) == [("G012345678",)]


def test_unused_commitment_is_spread_as_idle_under_the_idle_policy(native_warehouse):
    # default policy (proportional): to the owners of the account's cost, as `idle`
    rows = native_warehouse.sql(
        "select project_id, allocation_kind, sum(billed_cost), sum(effective_cost)"
        " from marts.fct_cost_allocation where line_class = 'idle_commitment'"
        " and billing_account_id = 'mca-555' group by 1, 2"
    )
    assert rows == [("llm-pretrain", "idle", Decimal("0"), Decimal("4.60"))]


@pytest.mark.parametrize(
    ("policy", "owner"), [("visible", "__idle__"), ("platform", "gpu-platform")]
)
def test_unused_commitment_follows_the_named_idle_owner(native_warehouse, policy, owner):
    copy = native_warehouse.copy(f"idle_{policy}")
    result = native_warehouse.dbt(
        "build",
        "--select",
        "int_bill_lines_classified+",
        "--vars",
        f"{{gpucost_default_billing_currency: USD, gpucost_idle_policy: {policy}}}",
        warehouse=copy,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    rows = native_warehouse.sql(
        "select project_id, allocation_kind, allocation_basis, sum(effective_cost)"
        " from marts.fct_cost_allocation where line_class = 'idle_commitment'"
        " and billing_account_id = 'mca-555' group by 1, 2, 3",
        warehouse=copy,
    )
    assert rows == [(owner, "idle", f"idle_{policy}", Decimal("4.60"))]


def test_gcp_project_labels_join_the_tags_and_resource_labels_win(native_warehouse):
    rows = native_warehouse.sql(
        "select billed_cost, project_id, allocation_kind from marts.fct_cost_allocation"
        f" where billing_account_id = '{GCP_LABEL_ACCOUNT}' order by billed_cost"
    )
    assert rows == [
        (Decimal("3.000000000000000000"), "rag-search", "direct"),
        (Decimal("4.000000000000000000"), "llm-pretrain", "direct"),
    ]


def test_focus_1_3_and_1_4_provider_columns_are_read(native_warehouse):
    rows = native_warehouse.sql(
        "select billing_account_id, provider_name, billed_cost"
        " from intermediate.int_bill_line_items"
        f" where billing_account_id in ('{FOCUS_13_ACCOUNT}', '{FOCUS_14_ACCOUNT}')"
        " order by billing_account_id, billed_cost"
    )
    assert [(account, provider, f"{cost:.2f}") for account, provider, cost in rows] == [
        (FOCUS_13_ACCOUNT, "Acme Cloud", "1.00"),
        (FOCUS_13_ACCOUNT, "Old Name", "2.00"),
        (FOCUS_14_ACCOUNT, "Acme Cloud", "5.00"),
        (FOCUS_14_ACCOUNT, "Acme Cloud", "6.00"),
        (FOCUS_14_ACCOUNT, "Acme Cloud", "7.00"),
    ]


def test_owner_tags_under_every_accepted_key_and_prefix_place_cost_directly(native_warehouse):
    rows = native_warehouse.sql(
        "select billed_cost, project_id, allocation_kind from marts.fct_cost_allocation"
        f" where billing_account_id = '{FOCUS_14_ACCOUNT}' order by billed_cost"
    )
    # user:project-id, project-id, and project_id before user:project_id (the keys' order)
    assert [(f"{cost:.2f}", project, kind) for cost, project, kind in rows] == [
        ("5.00", "llm-pretrain", "direct"),
        ("6.00", "rag-search", "direct"),
        ("7.00", "rag-search", "direct"),
    ]
