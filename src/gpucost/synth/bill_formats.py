"""Render a generated FOCUS bill in the providers' native export formats.

``gpucost generate --bill-format <format>`` writes the month as usual, then replaces its FOCUS
files (``billing/focus/**``) with the same bill lines in one native format, so the same month can
be built from every format and compared:

- ``focus``: billing/focus/<month>/*.csv, unchanged;
- ``cur-legacy``: billing/aws_cur/<month>/*.csv.gz, legacy CUR (``lineItem/...`` columns,
  ``resourceTags/user:<key>``);
- ``cur2``: billing/aws_cur/BILLING_PERIOD=<month>/*.parquet, CUR 2.0 / Data Exports (snake_case,
  ``resource_tags`` map);
- ``gcp``: billing/gcp/<month>/*.jsonl, BigQuery export rows (``cost``, ``credits``, ``labels``,
  ``invoice.month``);
- ``azure``: billing/azure/<month>/*.csv, Cost Management actual cost in the MCA spelling, one row
  per resource and day as Azure exports it;
- ``oci``: billing/oci/<month>/*.csv, an OCI cost report (``cost/myCost``, ``tags/<key>``);
- ``onprem``: billing/onprem/<month>/*.csv, the on-prem cost items (docs/billing-formats.md): each
  GPU node of the bill becomes a purchased ``hardware`` item on its Kubernetes node, priced so
  that its hourly depreciation in the generated month equals the node's cloud hourly cost exactly
  (price = hourly cost x hours of the month x 36 depreciation months, residual 0). An on-prem item
  has no tags, no credit, tax or one-off charge and is billed for every hour of the month, so the
  lines it cannot carry (storage, network, support, tax, credits: everything that is not a GPU
  node) stay in billing/focus/<month>/not_onprem.csv, and the node's hours of the month outside
  the generated days are billed too (as idle GPU time).

What each format can carry decides what survives. The billed cost of every line is kept exactly in
every format (Azure sums a resource's hours into its day). The effective (amortised) cost survives
in the CUR formats: a line discounted below its billed cost becomes a ``SavingsPlanCoveredUsage``
line with ``savingsPlan/SavingsPlanEffectiveCost``. GCP rows, Azure actual cost and OCI reports
carry one amount per line, so there effective = billed.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import shutil
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path

import duckdb

BILL_FORMATS = ("focus", "cur-legacy", "cur2", "gcp", "azure", "oci", "onprem")

_CUR_FIELDS = [
    ("identity/LineItemId", "identity_line_item_id"),
    ("bill/InvoiceId", "bill_invoice_id"),
    ("bill/InvoicingEntity", "bill_invoicing_entity"),
    ("bill/PayerAccountId", "bill_payer_account_id"),
    ("bill/BillingPeriodStartDate", "bill_billing_period_start_date"),
    ("bill/BillingPeriodEndDate", "bill_billing_period_end_date"),
    ("lineItem/UsageAccountId", "line_item_usage_account_id"),
    ("lineItem/LineItemType", "line_item_line_item_type"),
    ("lineItem/UsageStartDate", "line_item_usage_start_date"),
    ("lineItem/UsageEndDate", "line_item_usage_end_date"),
    ("lineItem/ProductCode", "line_item_product_code"),
    ("lineItem/ResourceId", "line_item_resource_id"),
    ("lineItem/AvailabilityZone", "line_item_availability_zone"),
    ("lineItem/UsageAmount", "line_item_usage_amount"),
    ("lineItem/CurrencyCode", "line_item_currency_code"),
    ("lineItem/UnblendedCost", "line_item_unblended_cost"),
    ("lineItem/LineItemDescription", "line_item_line_item_description"),
    ("product/ProductName", "product_product_name"),
    ("product/productFamily", "product_product_family"),
    ("product/regionCode", "product_region_code"),
    ("product/sku", "product_sku"),
    ("pricing/unit", "pricing_unit"),
    ("savingsPlan/SavingsPlanEffectiveCost", "savings_plan_savings_plan_effective_cost"),
]
_CUR_TYPES = {"Usage": "Usage", "Tax": "Tax", "Credit": "Credit", "Purchase": "Fee"}


def read_focus_lines(landing: Path) -> list[dict[str, str]]:
    """Every line of the FOCUS CSVs under ``landing/billing/focus``, in file order."""
    lines: list[dict[str, str]] = []
    for path in sorted((landing / "billing" / "focus").rglob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                row["_month"] = path.parent.name
                lines.append(row)
    return lines


def _tags(line: dict[str, str]) -> dict[str, str]:
    return json.loads(line["Tags"]) if line.get("Tags") else {}


def _line_id(line: dict[str, str], index: int) -> str:
    return hashlib.sha1(f"{index}|{sorted(line.items())}".encode()).hexdigest()[:24]


def cur_record(line: dict[str, str], index: int) -> dict[str, str]:
    """One FOCUS line as a CUR line (legacy column names; CUR 2.0 renames them)."""
    billed, effective = Decimal(line["BilledCost"]), Decimal(line["EffectiveCost"])
    line_type = _CUR_TYPES.get(line["ChargeCategory"], "Usage")
    discounted = line_type == "Usage" and billed != effective
    return {
        "identity/LineItemId": _line_id(line, index),
        "bill/InvoiceId": line["InvoiceId"],
        "bill/InvoicingEntity": line["InvoiceIssuerName"],
        "bill/PayerAccountId": line["BillingAccountId"],
        "bill/BillingPeriodStartDate": line["BillingPeriodStart"],
        "bill/BillingPeriodEndDate": line["BillingPeriodEnd"],
        "lineItem/UsageAccountId": line["SubAccountId"] or line["BillingAccountId"],
        "lineItem/LineItemType": "SavingsPlanCoveredUsage" if discounted else line_type,
        "lineItem/UsageStartDate": line["ChargePeriodStart"],
        "lineItem/UsageEndDate": line["ChargePeriodEnd"],
        "lineItem/ProductCode": line["ServiceName"],
        "lineItem/ResourceId": line["ResourceId"],
        "lineItem/AvailabilityZone": line.get("AvailabilityZone", ""),
        "lineItem/UsageAmount": line.get("PricingQuantity", ""),
        "lineItem/CurrencyCode": line["BillingCurrency"],
        "lineItem/UnblendedCost": line["BilledCost"],
        "lineItem/LineItemDescription": line["ChargeDescription"],
        "product/ProductName": line["ServiceName"],
        "product/productFamily": line.get("ServiceCategory", ""),
        "product/regionCode": line.get("RegionId", ""),
        "product/sku": line.get("SkuId", ""),
        "pricing/unit": line.get("PricingUnit", ""),
        "savingsPlan/SavingsPlanEffectiveCost": line["EffectiveCost"] if discounted else "",
    }


def _by_month(lines: Iterable[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    months: dict[str, list[dict[str, str]]] = defaultdict(list)
    for line in lines:
        months[line["_month"]].append(line)
    return months


def write_cur_legacy(lines: list[dict[str, str]], out: Path) -> list[Path]:
    written = []
    for month, month_lines in _by_month(lines).items():
        tag_keys = sorted({key for line in month_lines for key in _tags(line)})
        header = [legacy for legacy, _ in _CUR_FIELDS]
        header += [f"resourceTags/user:{k}" for k in tag_keys]
        path = out / "billing" / "aws_cur" / month / "gpucost-cur-00001.csv.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        # no write time and no file name in the gzip header: same month, same bytes
        with (
            path.open("wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed,
            io.TextIOWrapper(packed, encoding="utf-8", newline="") as handle,
        ):
            writer = csv.DictWriter(handle, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            for index, line in enumerate(month_lines):
                record = cur_record(line, index)
                record.update({f"resourceTags/user:{k}": v for k, v in _tags(line).items()})
                writer.writerow(record)
        written.append(path)
    return written


def write_cur2(lines: list[dict[str, str]], out: Path) -> list[Path]:
    written = []
    for month, month_lines in _by_month(lines).items():
        folder = out / "billing" / "aws_cur" / f"BILLING_PERIOD={month}"
        path = folder / "gpucost-cur2-00001.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        columns: dict[str, list] = {cur2: [] for _, cur2 in _CUR_FIELDS}
        columns["resource_tags"] = []
        for index, line in enumerate(month_lines):
            record = cur_record(line, index)
            for legacy, cur2 in _CUR_FIELDS:
                columns[cur2].append(record[legacy] or None)
            columns["resource_tags"].append({f"user_{k}": v for k, v in _tags(line).items()})
        import pyarrow as pa

        money = ("line_item_unblended_cost", "savings_plan_savings_plan_effective_cost")
        arrays = {}
        for name, values in columns.items():
            if name == "resource_tags":
                arrays[name] = pa.array(
                    [list(tags.items()) for tags in values], pa.map_(pa.string(), pa.string())
                )
            elif name in money:
                arrays[name] = pa.array(
                    [Decimal(value) if value else None for value in values], pa.decimal128(38, 18)
                )
            else:
                arrays[name] = pa.array(values, pa.string())
        table = pa.table(arrays)
        with duckdb.connect() as con:
            con.register("cur2", table)
            con.sql(f"copy cur2 to '{path}' (format parquet)")
        written.append(path)
    return written


def gcp_record(line: dict[str, str]) -> dict:
    """One FOCUS line as a BigQuery billing export row; a credit is a zero-cost row carrying it in
    ``credits``, as GCP reports promotions."""
    category = line["ChargeCategory"]
    cost_type = "tax" if category == "Tax" else "regular"
    is_credit = category == "Credit"
    credits = (
        [
            {
                "name": line["ChargeDescription"],
                "amount": Decimal(line["BilledCost"]),
                "type": "PROMOTION",
            }
        ]
        if is_credit
        else []
    )
    return {
        "billing_account_id": line["BillingAccountId"],
        "service": {"id": "", "description": line["ServiceName"]},
        "sku": {"id": line.get("SkuId", ""), "description": line["ChargeDescription"]},
        "usage_start_time": line["ChargePeriodStart"].replace("T", " ").replace("Z", " UTC"),
        "usage_end_time": line["ChargePeriodEnd"].replace("T", " ").replace("Z", " UTC"),
        "project": {"id": line["SubAccountId"] or None, "name": line.get("SubAccountName") or None},
        "labels": [{"key": k, "value": v} for k, v in _tags(line).items()],
        "location": {
            "region": line.get("RegionId") or None,
            "zone": line.get("AvailabilityZone") or None,
        },
        "resource": {"name": line["ResourceId"] or None, "global_name": line["ResourceId"] or None},
        # the amount as JSON number text, digit for digit (see _json_line)
        "cost": Decimal(0) if is_credit else Decimal(line["BilledCost"]),
        "currency": line["BillingCurrency"],
        "credits": credits,
        "invoice": {"month": line["BillingPeriodStart"][:7].replace("-", "")},
        "cost_type": cost_type,
    }


def _json_line(record: dict) -> str:
    # Decimal amounts written as their exact text (json has no decimal type; a float would round)
    placeholders: dict[str, str] = {}

    def swap(value):
        if isinstance(value, Decimal):
            key = f"__decimal_{len(placeholders)}__"
            placeholders[key] = format(value, "f")
            return key
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    text = json.dumps(swap(record), separators=(",", ":"))
    for key, number in placeholders.items():
        text = text.replace(f'"{key}"', number)
    return text


def write_gcp(lines: list[dict[str, str]], out: Path) -> list[Path]:
    written = []
    for month, month_lines in _by_month(lines).items():
        path = out / "billing" / "gcp" / month / "gcp_billing_export.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as handle:
            for line in month_lines:
                handle.write(_json_line(gcp_record(line)) + "\n")
        written.append(path)
    return written


_AZURE_COLUMNS = [
    "BillingAccountId", "BillingAccountName", "BillingPeriodStartDate", "BillingPeriodEndDate",
    "InvoiceId", "SubscriptionId", "SubscriptionName", "Date", "ChargeType", "PricingModel",
    "Frequency", "MeterCategory", "ProductName", "MeterId", "ResourceId", "ResourceLocation",
    "Quantity", "UnitOfMeasure", "CostInBillingCurrency", "BillingCurrency", "Tags",
]  # fmt: skip


def _us_date(iso: str) -> str:
    return f"{iso[5:7]}/{iso[8:10]}/{iso[0:4]}"


def write_azure(lines: list[dict[str, str]], out: Path) -> list[Path]:
    """Azure exports one row per resource, meter and day: hours of the same resource and day sum."""
    written = []
    for month, month_lines in _by_month(lines).items():
        days: dict[tuple, dict[str, object]] = {}
        for line in month_lines:
            charge_type = {"Tax": "Tax", "Credit": "Refund", "Purchase": "Purchase"}.get(
                line["ChargeCategory"], "Usage"
            )
            day = line["ChargePeriodStart"][:10]
            # a charge that spans more than a day (support, tax, credits) stays on its first day
            key = (line["ResourceId"], line["ChargeDescription"], line["Tags"], day, charge_type)
            row = days.setdefault(
                key,
                {
                    "BillingAccountId": line["BillingAccountId"],
                    "BillingAccountName": line["BillingAccountName"],
                    "BillingPeriodStartDate": _us_date(line["BillingPeriodStart"]),
                    "BillingPeriodEndDate": _us_date(_last_day(line["BillingPeriodEnd"])),
                    "InvoiceId": line["InvoiceId"],
                    "SubscriptionId": line["SubAccountId"] or line["BillingAccountId"],
                    "SubscriptionName": line.get("SubAccountName", ""),
                    "Date": _us_date(day),
                    "ChargeType": charge_type,
                    "PricingModel": "OnDemand",
                    "Frequency": "UsageBased" if charge_type == "Usage" else "OneTime",
                    "MeterCategory": line["ServiceName"],
                    "ProductName": line["ChargeDescription"],
                    "MeterId": line.get("SkuId", ""),
                    "ResourceId": line["ResourceId"],
                    "ResourceLocation": line.get("RegionId", ""),
                    "Quantity": Decimal(0),
                    "UnitOfMeasure": line.get("PricingUnit", ""),
                    "CostInBillingCurrency": Decimal(0),
                    "BillingCurrency": line["BillingCurrency"],
                    "Tags": line["Tags"],
                },
            )
            row["CostInBillingCurrency"] += Decimal(line["BilledCost"])  # type: ignore[operator]
            row["Quantity"] += Decimal(line.get("PricingQuantity") or 0)  # type: ignore[operator]
        path = out / "billing" / "azure" / month / "actualcost_mca.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=_AZURE_COLUMNS, lineterminator="\n")
            writer.writeheader()
            for row in days.values():
                writer.writerow(
                    {k: format(v, "f") if isinstance(v, Decimal) else v for k, v in row.items()}
                )
        written.append(path)
    return written


def _last_day(exclusive_end_iso: str) -> str:
    from datetime import datetime, timedelta

    end = datetime.strptime(exclusive_end_iso[:10], "%Y-%m-%d")
    return (end - timedelta(days=1)).strftime("%Y-%m-%d")


_OCI_COLUMNS = [
    "lineItem/referenceNo", "lineItem/tenantId", "lineItem/intervalUsageStart",
    "lineItem/intervalUsageEnd",
    "product/service", "product/compartmentId", "product/compartmentName", "product/region",
    "product/availabilityDomain", "product/resourceId", "usage/billedQuantity", "cost/productSku",
    "product/Description", "cost/myCost", "cost/currencyCode", "cost/skuUnitDescription",
    "lineItem/isCorrection", "lineItem/backreferenceNo",
]  # fmt: skip


def write_oci(lines: list[dict[str, str]], out: Path) -> list[Path]:
    written = []
    for month, month_lines in _by_month(lines).items():
        tag_keys = sorted({key for line in month_lines for key in _tags(line)})
        path = out / "billing" / "oci" / month / "reports_cost-csv_0001.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as handle:
            header = _OCI_COLUMNS + [f"tags/{k}" for k in tag_keys]
            writer = csv.DictWriter(handle, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            for index, line in enumerate(month_lines):
                record = {
                    "lineItem/referenceNo": _line_id(line, index),
                    "lineItem/tenantId": line["BillingAccountId"],
                    "lineItem/intervalUsageStart": line["ChargePeriodStart"],
                    "lineItem/intervalUsageEnd": line["ChargePeriodEnd"],
                    "product/service": line["ServiceName"],
                    "product/compartmentId": line["SubAccountId"],
                    "product/compartmentName": line.get("SubAccountName", ""),
                    "product/region": line.get("RegionId", ""),
                    "product/availabilityDomain": line.get("AvailabilityZone", ""),
                    "product/resourceId": line["ResourceId"],
                    "usage/billedQuantity": line.get("PricingQuantity", ""),
                    "cost/productSku": line.get("SkuId", ""),
                    "product/Description": line["ChargeDescription"],
                    "cost/myCost": line["BilledCost"],
                    "cost/currencyCode": line["BillingCurrency"],
                    "cost/skuUnitDescription": line.get("PricingUnit", ""),
                    "lineItem/isCorrection": "false",
                    "lineItem/backreferenceNo": "",
                }
                record.update({f"tags/{k}": v for k, v in _tags(line).items()})
                writer.writerow(record)
        written.append(path)
    return written


ONPREM_DEPRECIATION_MONTHS = 36
_ONPREM_COLUMNS = [
    "item_id", "item_type", "resource_id", "cluster_id", "description", "billing_account_id",
    "currency", "amount", "start_date", "end_date", "depreciation_months", "residual_value",
    "price_per_kwh",
]  # fmt: skip


def kube_nodes(landing: Path) -> dict[str, tuple[str, str]]:
    """Cloud instance id / provider id / node name -> (Kubernetes node name, cluster), from the
    landed ``kube_node_info`` series."""
    nodes: dict[str, tuple[str, str]] = {}
    for path in sorted((landing / "metrics" / "kube").rglob("kube_node_info.json")):
        for series in json.loads(path.read_text(encoding="utf-8"))["data"]["result"]:
            metric = series["metric"]
            node = (metric["node"], metric.get("cluster", ""))
            nodes[metric["node"]] = node
            if metric.get("provider_id"):
                nodes[metric["provider_id"]] = node
                nodes[metric["provider_id"].rsplit("/", 1)[-1]] = node
    return nodes


def _hours_in_month(month_start_iso: str) -> int:
    from datetime import datetime

    start = datetime.strptime(month_start_iso[:7], "%Y-%m")
    end = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return int((end - start).total_seconds()) // 3600


def write_onprem(lines: list[dict[str, str]], out: Path) -> list[Path]:
    """GPU nodes as on-prem hardware items; every other line stays in a FOCUS file (see module)."""
    nodes = kube_nodes(out)
    written = []
    for month, month_lines in _by_month(lines).items():
        hourly: dict[tuple, set[Decimal]] = defaultdict(set)
        rest = []
        for line in month_lines:
            node = nodes.get(line["ResourceId"])
            is_hour = line["ChargePeriodEnd"][:13] != line["ChargePeriodStart"][:13]
            if node and line["ChargeCategory"] == "Usage" and is_hour:
                key = (node, line["BillingAccountId"], line["BillingCurrency"], line["ResourceId"])
                hourly[key].add(Decimal(line["BilledCost"]))
            else:
                rest.append(line)
        items = []
        for (node, account, currency, resource), costs in sorted(hourly.items()):
            if len(costs) != 1:
                raise ValueError(f"{resource}: hourly cost varies ({sorted(costs)}), not one asset")
            (cost,) = costs
            hours = _hours_in_month(month)
            price = cost * hours * ONPREM_DEPRECIATION_MONTHS
            items.append(
                {
                    "item_id": f"hw-{node[0]}",
                    "item_type": "hardware",
                    "resource_id": node[0],
                    "cluster_id": node[1],
                    "description": f"GPU server {node[0]} (was {resource})",
                    "billing_account_id": account,
                    "currency": currency,
                    "amount": format(price, "f"),
                    "start_date": f"{month}-01",
                    "end_date": "",
                    "depreciation_months": ONPREM_DEPRECIATION_MONTHS,
                    "residual_value": "0",
                    "price_per_kwh": "",
                }
            )
        path = out / "billing" / "onprem" / month / "onprem_items.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=_ONPREM_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(items)
        written.append(path)
        if rest:
            written.append(_write_focus_rest(rest, out, month))
    return written


def _write_focus_rest(
    rest: list[dict[str, str]], out: Path, month: str, name: str = "not_onprem.csv"
) -> Path:
    path = out / "billing" / "focus_rest" / month / name
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [key for key in rest[0] if key != "_month"]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=header, lineterminator="\n", extrasaction="ignore"
        )
        writer.writeheader()
        writer.writerows(rest)
    return path


_WRITERS = {
    "cur-legacy": write_cur_legacy,
    "cur2": write_cur2,
    "gcp": write_gcp,
    "azure": write_azure,
    "oci": write_oci,
    "onprem": write_onprem,
}


def _tag_cluster(line: dict[str, str]) -> str | None:
    try:
        tags = json.loads(line.get("Tags") or "{}")
    except json.JSONDecodeError:
        return None
    return tags.get("cluster") if isinstance(tags, dict) else None


def render_bill(landing: Path, bill_format: str) -> list[Path]:
    """Replace the generated FOCUS bill under ``landing`` by the same lines in ``bill_format``.

    The billed cost of every line is kept exactly (the sum over the files equals the FOCUS total);
    returns the files written."""
    if bill_format not in BILL_FORMATS:
        choices = ", ".join(BILL_FORMATS)
        raise ValueError(f"unknown bill format {bill_format!r}; choose one of {choices}")
    if bill_format == "focus":
        return sorted((landing / "billing" / "focus").rglob("*.csv"))
    lines = read_focus_lines(landing)
    # The Slurm queue's node-hours (Tags cluster = a folder under scheduler/slurm/) match their
    # hosts by FOCUS ResourceName; native formats have no resource-name column: they stay FOCUS.
    slurm_dir = landing / "scheduler" / "slurm"
    slurm = {p.name for p in slurm_dir.iterdir() if p.is_dir()} if slurm_dir.exists() else set()
    hosts = [line for line in lines if _tag_cluster(line) in slurm]
    lines = [line for line in lines if _tag_cluster(line) not in slurm]
    written = _WRITERS[bill_format](lines, landing)
    for month, month_lines in _by_month(hosts).items():
        written.append(_write_focus_rest(month_lines, landing, month, "slurm_hosts.csv"))
    shutil.rmtree(landing / "billing" / "focus")
    rest = landing / "billing" / "focus_rest"
    if rest.exists():  # the lines the format cannot carry stay FOCUS lines
        rest.rename(landing / "billing" / "focus")
        written = [
            landing / "billing" / "focus" / p.relative_to(rest) if p.is_relative_to(rest) else p
            for p in written
        ]
    return written
