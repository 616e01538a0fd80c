"""On-prem GPUs: purchased hardware, colocation, licences and power become hourly bill lines that
flow through the same allocation as cloud lines, exact to 1e-18 and reconciled."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from tests.python.landing_zones import build, copy_landing, small_month_landing

pytestmark = pytest.mark.warehouse

ITEMS = """item_id,item_type,resource_id,cluster_id,description,billing_account_id,currency,amount,start_date,end_date,depreciation_months,residual_value,price_per_kwh
dgx-01,hardware,{node},{cluster},8x H100 server,dc-finance,USD,250000.00,2026-01-15,,36,25000.00,
rack-7,colocation,,{cluster},Rack 7 colocation,dc-finance,USD,4200.00,2026-01-01,,,,
nvaie,licence,,{cluster},NVIDIA AI Enterprise,dc-finance,USD,3600.00,2026-01-01,,,,
grid,power,{node},{cluster},Grid tariff,dc-finance,USD,,2026-01-01,,,,0.142
"""
UNUSABLE_ITEM = "old-box,hardware,n1,,no life,dc,USD,1000,2026-01-01,,0,,\n"
T0 = 1790812800  # 2026-10-01T00:00:00Z
# GPU energy counter (mJ): +2.52e9 mJ per 15 min, an exporter restart (reset) in hour 1
ENERGY = [
    [T0, "100000000000"],
    [T0 + 900, "102520000000"],
    [T0 + 1800, "105040000000"],
    [T0 + 3600, "110080000000"],
    [T0 + 4500, "2000000000"],
    [T0 + 5400, "4520000000"],
]


@pytest.fixture(scope="module")
def onprem_warehouse(tmp_path_factory):
    # the session's small month (one day, October's first, of two GPU nodes with workloads): a
    # smaller build than the generated month's; the items are on its first node by name
    landing = copy_landing(
        small_month_landing(tmp_path_factory), tmp_path_factory.mktemp("onprem") / "landing"
    )
    node, cluster = min(
        (series["metric"]["node"], series["metric"]["cluster"])
        for path in landing.glob("metrics/kube/*/*/kube_node_info.json")
        for series in json.loads(path.read_text())["data"]["result"]
    )
    (landing / "billing" / "onprem").mkdir(parents=True)
    # and one item that cannot be depreciated (0 months): quarantined beside the good ones, whose
    # amounts and reconciliation the tests below check to the 1e-18 (one build for both)
    (landing / "billing" / "onprem" / "items.csv").write_text(
        ITEMS.format(node=node, cluster=cluster) + UNUSABLE_ITEM, encoding="utf-8"
    )
    series = {
        "__name__": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "gpu": "0",
        "UUID": "GPU-energy-0",
        "Hostname": node,
        "cluster": cluster,
    }
    doc = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": series, "values": ENERGY}]},
    }
    (landing / "metrics" / "dcgm" / cluster / "energy.json").write_text(json.dumps(doc))
    warehouse = build(landing, tmp_path_factory.mktemp("onprem_build"))
    warehouse.node = node
    return warehouse


def _lines(warehouse, item_type: str) -> tuple:
    return warehouse.sql(
        "select count(*), sum(billed_cost), min(billed_cost), max(billed_cost)"
        " from intermediate.int_bill_line_items"
        f" where source_format = 'onprem' and native_charge_type = '{item_type}'"
    )[0]


def test_hardware_depreciates_hour_by_hour_to_the_exact_monthly_amount(onprem_warehouse):
    # (250000 - 25000) / 36 months = 6250 per month, over October's 744 hours
    count, total, smallest, largest = _lines(onprem_warehouse, "hardware")
    assert (count, total) == (744, Decimal("6250"))
    assert largest - smallest <= Decimal("1e-18")  # largest remainder: units differ by at most one


@pytest.mark.parametrize(("item_type", "monthly"), [("colocation", "4200"), ("licence", "3600")])
def test_monthly_fees_split_over_the_month(onprem_warehouse, item_type, monthly):
    count, total, _, _ = _lines(onprem_warehouse, item_type)
    assert (count, total) == (744, Decimal(monthly))


def test_power_is_energy_from_the_counter_times_the_tariff(onprem_warehouse):
    # hour 0: 3 samples -> 2 deltas of 2.52e9 mJ; hour 1: +5.04e9, then a reset (2e9 counted from 0),
    # then +2.52e9
    hours = {0: 2 * 2_520_000_000, 1: 5_040_000_000 + 2_000_000_000 + 2_520_000_000}
    rows = onprem_warehouse.sql(
        "select charge_period_start_at, billed_cost from intermediate.int_bill_line_items"
        " where source_format = 'onprem' and native_charge_type = 'power' order by 1"
    )
    assert len(rows) == 2
    for (_, cost), millijoules in zip(rows, hours.values(), strict=True):
        units = millijoules * 142_000_000_000_000_000 // 3_600_000_000  # 0.142 / kWh, 1e-18 units
        assert cost == Decimal(units).scaleb(-18)


def test_onprem_lines_flow_through_the_same_allocation_and_reconcile(onprem_warehouse):
    kinds = dict(
        onprem_warehouse.sql(
            "select alloc.allocation_kind, count(*) from marts.fct_cost_allocation as alloc"
            " where alloc.provider_name = 'On-prem' and alloc.line_class = 'gpu_node' group by 1"
        )
    )
    assert kinds.get("usage", 0) > 0  # the node's hours with workloads are prorated to them
    components = dict(
        onprem_warehouse.sql(
            "select native_charge_type, min(cost_component) from marts.fct_cost_allocation as alloc"
            " inner join intermediate.int_bill_line_items as line using (charge_id)"
            " where line.source_format = 'onprem' group by 1"
        )
    )
    assert components["power"] == "energy" and components["licence"] == "licensing"
    # the hardware of a GPU node is its compute: split into GPU, CPU and memory parts (docs/allocation.md)
    assert components["hardware"] in ("compute_cpu", "compute_gpu")
    assert onprem_warehouse.sql(
        "select bool_and(is_reconciled), max(abs(billed_residual)) from marts.rpt_reconciliation"
        " where provider_name = 'On-prem'"
    ) == [(True, 0)]


def test_an_unusable_item_is_quarantined_with_its_reason(onprem_warehouse):
    assert onprem_warehouse.sql(
        "select metric_name, quarantine_reason from marts.rpt_quarantine"
        " where source_kind = 'billing/onprem'"
    ) == [("item old-box", "invalid depreciation_months")]
