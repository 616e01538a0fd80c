"""Bill writers: the FOCUS export (one CSV per billing month, closed with support, tax and credit
lines), node-hours, storage and egress lines."""

from __future__ import annotations

import csv
import hashlib
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from gpucost.synth import generator_slurm
from gpucost.synth.common import iso, money, random_hex, sku_id, tags_json
from gpucost.synth.fleet import Cluster
from gpucost.synth.reference import (
    CENT,
    CREDIT_AMOUNT,
    DISCOUNT,
    EBS_GP3_GB_MONTH,
    EGRESS_PER_GB,
    FOCUS_COLUMNS,
    S3_STANDARD_GB_MONTH,
    SECONDS_PER_DAY,
    TAX_RATE,
    TEN_DP,
)


class FocusWriter:
    """Streams FOCUS rows into one CSV per billing month and closes each month with the
    support, tax and credit lines."""

    def __init__(self, out_dir: Path, account_id: str, account_name: str) -> None:
        self.out_dir = out_dir
        self.account_id = account_id
        self.account_name = account_name
        self.month: tuple[int, int] | None = None
        self.fh: Any = None
        self.writer: Any = None
        self.usage_total = Decimal(0)
        self.lines = 0
        self.billed_total = Decimal(0)
        self.effective_total = Decimal(0)
        self.files = 0
        self.months: list[str] = []
        self.base: dict[str, str] = {}

    def _period(self) -> tuple[int, int]:
        assert self.month is not None
        y, m = self.month
        start = datetime(y, m, 1, tzinfo=UTC)
        end = datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=UTC)
        return int(start.timestamp()), int(end.timestamp())

    def open_month(self, ts: int) -> None:
        dt = datetime.fromtimestamp(ts, UTC)
        month = (dt.year, dt.month)
        if month == self.month:
            return
        self.close_month()
        self.month = month
        tag = f"{dt.year:04d}-{dt.month:02d}"
        self.months.append(tag)
        path = self.out_dir / "billing" / "focus" / tag / f"focus_export_{self.account_id}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = path.open("w", encoding="utf-8", newline="")
        self.writer = csv.writer(self.fh, lineterminator="\n")
        self.writer.writerow(FOCUS_COLUMNS)
        self.files += 1
        self.usage_total = Decimal(0)
        ps, pe = self._period()
        self.base = {
            "BillingAccountId": self.account_id,
            "BillingAccountName": self.account_name,
            "BillingCurrency": "USD",
            "BillingPeriodStart": iso(ps),
            "BillingPeriodEnd": iso(pe),
            "InvoiceId": f"INV-{tag}-0001",
            "InvoiceIssuerName": "Amazon Web Services, Inc.",
            "ProviderName": "AWS",
            "PublisherName": "Amazon Web Services, Inc.",
        }

    def row(self, **cols: str) -> None:
        rec = {**self.base, **cols}
        self.writer.writerow([rec.get(c, "") for c in FOCUS_COLUMNS])
        self.lines += 1
        billed = Decimal(rec["BilledCost"])
        self.billed_total += billed
        self.effective_total += Decimal(rec["EffectiveCost"])
        if rec["ChargeCategory"] == "Usage":
            self.usage_total += billed

    def close_month(self) -> None:
        if self.month is None:
            return
        ps, pe = self._period()
        period = {"ChargePeriodStart": iso(ps), "ChargePeriodEnd": iso(pe)}
        mgmt = {"SubAccountId": self.account_id, "SubAccountName": "acme-ml-management"}
        usage = self.usage_total
        support = (
            min(usage, Decimal(10000)) * Decimal("0.10")
            + max(Decimal(0), min(usage, Decimal(80000)) - 10000) * Decimal("0.07")
            + max(Decimal(0), min(usage, Decimal(250000)) - 80000) * Decimal("0.05")
            + max(Decimal(0), usage - 250000) * Decimal("0.03")
        )
        support = money(max(Decimal(100), support).quantize(CENT, rounding=ROUND_HALF_EVEN))
        self.row(
            **period,
            **mgmt,
            BilledCost=support,
            ChargeCategory="Usage",
            ChargeDescription="AWS Support (Business)",
            ChargeFrequency="Recurring",
            ConsumedQuantity="1",
            ConsumedUnit="Month",
            ContractedCost=support,
            ContractedUnitPrice=support,
            EffectiveCost=support,
            ListCost=support,
            ListUnitPrice=support,
            PricingCategory="Standard",
            PricingQuantity="1",
            PricingUnit="Month",
            ServiceCategory="Management and Governance",
            ServiceName="AWS Support (Business)",
            SkuId=sku_id("AWSSupportBusiness"),
            SkuPriceId=sku_id("AWSSupportBusiness") + ".JRTCKXETXF.6YS6EN2CT7",
        )
        tax = money((self.usage_total * TAX_RATE).quantize(CENT, rounding=ROUND_HALF_EVEN))
        self.row(
            **period,
            **mgmt,
            BilledCost=tax,
            ChargeCategory="Tax",
            ChargeDescription="Tax for billing period",
            ChargeFrequency="Recurring",
            ContractedCost=tax,
            EffectiveCost=tax,
            ListCost=tax,
            ServiceCategory="Other",
            ServiceName="Tax",
        )
        credit = money(CREDIT_AMOUNT)
        self.row(
            **period,
            **mgmt,
            BilledCost=credit,
            ChargeCategory="Credit",
            ChargeDescription="AWS Activate promotional credit",
            ChargeFrequency="One-Time",
            ContractedCost=credit,
            EffectiveCost=credit,
            ListCost=credit,
            ServiceCategory="Compute",
            ServiceName="Amazon Elastic Compute Cloud",
        )
        self.fh.close()
        self.fh = self.writer = None
        self.month = None


@dataclass(slots=True)
class Storage:
    cluster: Cluster
    kind: str  # ebs | s3
    resource_id: str
    size_gb: int
    tags: str
    start: int
    zone: str


def build_storage(
    rng: random.Random, fleet: list[Cluster], project_team: dict[str, str]
) -> list[Storage]:
    out: list[Storage] = []
    projects = list(project_team)
    for cl in fleet:
        for node in cl.nodes:  # root volumes: shared infrastructure, untagged
            vol = "vol-0" + random_hex(rng, 16)
            out.append(Storage(cl, "ebs", vol, 500, "", node.join, node.zone))
        n_pv = max(2, len(cl.nodes) // 2 + 2)
        for _ in range(n_pv):  # dataset / checkpoint volumes
            vol = "vol-0" + random_hex(rng, 16)
            size = rng.choice((1000, 1500, 2000, 3000, 4000))
            tags = ""
            if rng.random() < 0.7:
                proj = rng.choice(projects)
                tags = tags_json({"project_id": proj, "team_id": project_team[proj]})
            zone = rng.choice(cl.nodes).zone
            out.append(Storage(cl, "ebs", vol, size, tags, 0, zone))
        for j in range(max(1, len(cl.nodes) // 4)):
            proj = rng.choice(projects)
            if j % 2 == 0:
                bucket = f"acme-{proj}-{cl.name}-datasets"
                if any(o.resource_id == bucket for o in out):
                    bucket = f"{bucket}-{j}"
                tags = tags_json({"project_id": proj, "team_id": project_team[proj]})
            else:
                bucket = f"acme-{cl.name}-scratch-{j}"
                tags = ""
            out.append(Storage(cl, "s3", bucket, rng.randrange(2000, 60000), tags, 0, ""))
    return out


def bill_day_tagged_egress(
    focus: FocusWriter, fleet: list[Cluster], day_start: int, project_team: dict[str, str]
) -> None:
    """One day's data transfer out of the first cluster's tagged NAT gateway: direct to its project
    (the untagged egress lines of bill_day stay shared by policy)."""
    cl = fleet[0]
    rng = random.Random(f"{cl.name}/egress/{day_start}")
    project = sorted(project_team)[0]
    gb = Decimal(rng.randrange(5_000, 60_000)) / 1000
    cost = money(gb * EGRESS_PER_GB)
    sku = sku_id(f"NatGateway-Bytes/{cl.region}")
    focus.row(
        BilledCost=cost,
        ChargeCategory="Usage",
        ChargeDescription="$0.090 per GB - data transfer out to the internet via NAT gateway",
        ChargeFrequency="Usage-Based",
        ChargePeriodStart=iso(day_start),
        ChargePeriodEnd=iso(day_start + SECONDS_PER_DAY),
        ConsumedQuantity=format(gb, "f"),
        ConsumedUnit="GB",
        ContractedCost=cost,
        ContractedUnitPrice=money(EGRESS_PER_GB),
        EffectiveCost=cost,
        ListCost=cost,
        ListUnitPrice=money(EGRESS_PER_GB),
        PricingCategory="Standard",
        PricingQuantity=format(gb, "f"),
        PricingUnit="GB",
        RegionId=cl.region,
        RegionName=cl.region_name,
        ResourceId=f"nat-0{hashlib.sha256(cl.name.encode()).hexdigest()[:16]}",
        ResourceType="nat-gateway",
        ServiceCategory="Networking",
        ServiceName="AWS Data Transfer",
        SkuId=sku,
        SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
        SubAccountId=cl.sub_account_id,
        SubAccountName=cl.sub_account_name,
        Tags=tags_json({"project_id": project, "team_id": project_team[project]}),
    )


def bill_day(
    focus: FocusWriter,
    fleet: list[Cluster],
    storage: list[Storage],
    day_start: int,
    rng: random.Random,
    sku_cache: dict[str, str],
    hpc: generator_slurm.SlurmCluster | None = None,
) -> None:
    focus.open_month(day_start)
    dt = datetime.fromtimestamp(day_start, UTC)
    next_month = datetime(dt.year + (dt.month == 12), dt.month % 12 + 1, 1, tzinfo=UTC)
    days_in_month = (next_month - datetime(dt.year, dt.month, 1, tzinfo=UTC)).days
    day_iso, next_iso = iso(day_start), iso(day_start + SECONDS_PER_DAY)
    keep = 1 - DISCOUNT
    for h in range(24):
        hs = day_start + h * 3600
        hs_iso, he_iso = iso(hs), iso(hs + 3600)
        for cl in [*fleet, *([hpc] if hpc is not None else [])]:
            tags = tags_json({"cluster": cl.name})
            for node in cl.nodes:
                if node.join > hs:
                    continue
                it = node.itype
                price = money(it.hourly_price)
                eff = money(it.hourly_price * keep)
                sku = sku_cache[it.name]
                focus.row(
                    AvailabilityZone=node.zone,
                    BilledCost=price,
                    ChargeCategory="Usage",
                    ChargeDescription=f"${it.hourly_price} per On Demand Linux {it.name} "
                    "Instance Hour",
                    ChargeFrequency="Usage-Based",
                    ChargePeriodStart=hs_iso,
                    ChargePeriodEnd=he_iso,
                    ConsumedQuantity="1",
                    ConsumedUnit="Hours",
                    ContractedCost=eff,
                    ContractedUnitPrice=eff,
                    EffectiveCost=eff,
                    ListCost=price,
                    ListUnitPrice=price,
                    PricingCategory="Standard",
                    PricingQuantity="1",
                    PricingUnit="Hours",
                    RegionId=cl.region,
                    RegionName=cl.region_name,
                    ResourceId=node.instance_id,
                    ResourceName=node.name,
                    ResourceType="instance",
                    ServiceCategory="Compute",
                    ServiceName="Amazon Elastic Compute Cloud",
                    SkuId=sku,
                    SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                    SubAccountId=cl.sub_account_id,
                    SubAccountName=cl.sub_account_name,
                    Tags=tags,
                )
    for s in storage:
        if s.start >= day_start + SECONDS_PER_DAY:
            continue
        cl = s.cluster
        if s.kind == "ebs":
            unit_price, service, rtype = EBS_GP3_GB_MONTH, "Amazon Elastic Block Store", "volume"
            desc = f"$0.08 per GB-month of General Purpose (gp3) provisioned storage - {cl.region}"
            size = Decimal(s.size_gb)
        else:
            unit_price, service, rtype = (
                S3_STANDARD_GB_MONTH,
                "Amazon Simple Storage Service",
                "bucket",
            )
            desc = "$0.023 per GB - first 50 TB / month of storage used"
            size = Decimal(s.size_gb) * (1 + Decimal(rng.randrange(-200, 400)) / 100000)
        qty = (size / days_in_month).quantize(TEN_DP, rounding=ROUND_HALF_EVEN)
        cost = money(qty * unit_price)
        sku = sku_id(f"{service}/{cl.region}")
        focus.row(
            AvailabilityZone=s.zone,
            BilledCost=cost,
            ChargeCategory="Usage",
            ChargeDescription=desc,
            ChargeFrequency="Usage-Based",
            ChargePeriodStart=day_iso,
            ChargePeriodEnd=next_iso,
            ConsumedQuantity=format(qty, "f"),
            ConsumedUnit="GB-Mo",
            ContractedCost=cost,
            ContractedUnitPrice=money(unit_price),
            EffectiveCost=cost,
            ListCost=cost,
            ListUnitPrice=money(unit_price),
            PricingCategory="Standard",
            PricingQuantity=format(qty, "f"),
            PricingUnit="GB-Mo",
            RegionId=cl.region,
            RegionName=cl.region_name,
            ResourceId=s.resource_id,
            ResourceName=s.resource_id,
            ResourceType=rtype,
            ServiceCategory="Storage",
            ServiceName=service,
            SkuId=sku,
            SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
            SubAccountId=cl.sub_account_id,
            SubAccountName=cl.sub_account_name,
            Tags=s.tags,
        )
    for cl in fleet:
        gb = Decimal(rng.randrange(40_000, 900_000)) / 1000
        cost = money(gb * EGRESS_PER_GB)
        sku = sku_id(f"DataTransfer-Out-Bytes/{cl.region}")
        focus.row(
            BilledCost=cost,
            ChargeCategory="Usage",
            ChargeDescription="$0.090 per GB - first 10 TB / month data transfer out beyond the "
            "global free tier",
            ChargeFrequency="Usage-Based",
            ChargePeriodStart=day_iso,
            ChargePeriodEnd=next_iso,
            ConsumedQuantity=format(gb, "f"),
            ConsumedUnit="GB",
            ContractedCost=cost,
            ContractedUnitPrice=money(EGRESS_PER_GB),
            EffectiveCost=cost,
            ListCost=cost,
            ListUnitPrice=money(EGRESS_PER_GB),
            PricingCategory="Standard",
            PricingQuantity=format(gb, "f"),
            PricingUnit="GB",
            RegionId=cl.region,
            RegionName=cl.region_name,
            ServiceCategory="Networking",
            ServiceName="AWS Data Transfer",
            SkuId=sku,
            SkuPriceId=f"{sku}.JRTCKXETXF.6YS6EN2CT7",
            SubAccountId=cl.sub_account_id,
            SubAccountName=cl.sub_account_name,
        )
