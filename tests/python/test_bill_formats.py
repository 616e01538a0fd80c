"""The same generated month, billed in every native format (gpucost.synth.bill_formats), builds and
reconciles, with the same bill and the same per-team totals as far as each format can carry them.

Every rendering lands in one zone and builds once (``_zone``): the five cloud formats and the on-prem
month, each a copy of the month billed to an account of its own (``FORMAT_ACCOUNTS``), and the two
restated months, which keep the accounts they had (the month's own for legacy CUR, 111111111111 for
FOCUS). Every test reads its own account(s) and compares them with the FOCUS month (the session's
``small_month_warehouse``) to the 1e-18. Copies under different accounts cannot move each other's
money: a bill line's idle GPU cost stays on the line (``gpucost_idle_scope: node_hour``), a shared
line spreads over its own account's owners, a delivery supersedes only one of the same provider,
account and month, and a duplicate is a row equal in every normalised value, its account included
(docs/trust.md); test_the_formats_zone_holds_each_format_* checks that no account lost a line to
another."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
from decimal import Decimal
from functools import partial
from pathlib import Path

import duckdb
import pytest

from gpucost.synth.bill_formats import BILL_FORMATS, read_focus_lines, render_bill
from tests.python.landing_zones import (
    build,
    copy_landing,
    shared,
    shared_fixture,
    small_month_landing,
    small_month_warehouse,
)

pytestmark = pytest.mark.warehouse

# the cloud exports carry the whole bill; on-prem carries the GPU nodes only (tested on its own below)
NATIVE = [fmt for fmt in BILL_FORMATS if fmt not in ("focus", "onprem")]


@shared_fixture
def small_month(tmp_path_factory) -> Path:
    # without the Slurm queue: its node-hours stay FOCUS lines under every format (test_usage_sources)
    return small_month_landing(tmp_path_factory)


# the account each format's copy of the month is billed to in the shared zone (the FOCUS month has
# one billing account, 806960286286 for seed 11, which the restated legacy CUR keeps; sub-accounts are
# kept)
FORMAT_ACCOUNTS = {fmt: str(900000000001 + index) for index, fmt in enumerate([*NATIVE, "onprem"])}
RESTATED_FOCUS_ACCOUNT = "111111111111"


def _rendered_part(month: Path, part: Path, fmt: str) -> Path:
    """A copy of ``month`` whose FOCUS bill, billed to the format's account, is rendered in ``fmt``."""
    copy_landing(month, part)
    for source in sorted((part / "billing" / "focus").rglob("*.csv")):
        with source.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        with source.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(dict(row, BillingAccountId=FORMAT_ACCOUNTS[fmt]) for row in rows)
    render_bill(part, fmt)
    return part


def _move_bill(part: Path, landing: Path) -> None:
    """Moves a part's bill files into the zone, where the part's own landing holds them (file times
    kept: a move within the file system is a rename)."""
    for path in sorted(p for p in (part / "billing").rglob("*") if p.is_file()):
        moved = landing / path.relative_to(part)
        assert not moved.exists(), f"two parts write {moved}"
        moved.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, moved)
    shutil.rmtree(part)


def _zone(month: Path, root: Path):
    """The month's telemetry with every rendering's bill (no FOCUS bill of the month itself), built;
    returns the warehouse and what the restated months' tests compare (``_restated``)."""
    landing = copy_landing(month, root / "landing")
    shutil.rmtree(landing / "billing" / "focus")
    for fmt in FORMAT_ACCOUNTS:
        _move_bill(_rendered_part(month, root / f"part_{fmt}", fmt), landing)
    restated = _restated(month, root / "part_restated")
    _move_bill(root / "part_restated", landing)
    return build(landing, root / "build"), restated


@shared_fixture
def zone(small_month, tmp_path_factory):
    return shared(tmp_path_factory, "bill_formats_zone", partial(_zone, small_month))


@shared_fixture
def all_formats(zone):
    """The warehouse of every rendering, built once per session."""
    return zone[0]


@shared_fixture
def focus_month(tmp_path_factory):
    """The FOCUS month itself, built once per session (the reference every format is compared to)."""
    return small_month_warehouse(tmp_path_factory)


def _account(fmt: str) -> str:
    return f"billing_account_id = '{FORMAT_ACCOUNTS[fmt]}'"


def _billed_in_files(landing: Path, fmt: str) -> Decimal:
    """The bill's total read back from the rendered files with plain Python / DuckDB."""
    total = Decimal(0)
    if fmt == "cur-legacy":
        for path in landing.rglob("*.csv.gz"):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                total += sum(Decimal(r["lineItem/UnblendedCost"]) for r in csv.DictReader(handle))
    elif fmt == "cur2":
        for path in landing.rglob("*.parquet"):
            with duckdb.connect() as con:
                total += con.sql(
                    f"select sum(line_item_unblended_cost) from read_parquet('{path}')"
                ).fetchall()[0][0]
    elif fmt == "gcp":
        for path in landing.rglob("*.jsonl"):
            for text in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(text, parse_float=Decimal, parse_int=Decimal)
                total += row["cost"] + sum(credit["amount"] for credit in row["credits"])
    elif fmt == "azure":
        for path in (landing / "billing" / "azure").rglob("*.csv"):
            with path.open(newline="", encoding="utf-8") as handle:
                total += sum(Decimal(r["CostInBillingCurrency"]) for r in csv.DictReader(handle))
    elif fmt == "oci":
        for path in (landing / "billing" / "oci").rglob("*.csv"):
            with path.open(newline="", encoding="utf-8") as handle:
                total += sum(Decimal(r["cost/myCost"]) for r in csv.DictReader(handle))
    return total


@pytest.mark.parametrize("fmt", NATIVE)
def test_rendering_keeps_every_billed_cent(small_month, tmp_path, fmt):
    focus_total = sum(Decimal(line["BilledCost"]) for line in read_focus_lines(small_month))
    landing = tmp_path / "landing"
    shutil.copytree(small_month, landing)
    written = render_bill(landing, fmt)
    assert written and not (landing / "billing" / "focus").exists()
    assert _billed_in_files(landing, fmt) == focus_total


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown bill format 'cur3'"):
        render_bill(tmp_path, "cur3")


def _per_team(warehouse, where: str = "true") -> dict:
    return {
        team: (billed, effective)
        for team, billed, effective in warehouse.sql(
            "select team_id, sum(billed_cost), sum(effective_cost) from marts.fct_cost_allocation"
            f" where {where} group by 1"
        )
    }


def test_the_formats_zone_holds_each_format_under_its_own_account(zone, focus_month):
    # the zone's accounts are the formats' and the restated months' (the month's own and FOCUS's);
    # each cloud format's is a whole copy of the month (none read twice, none superseded by another
    # format's delivery)
    warehouse, restated = zone
    accounts = dict(
        (account, rest)
        for account, *rest in warehouse.sql(
            "select billing_account_id, count(*), sum(superseded_line_count),"
            " sum(duplicate_line_count) from marts.rpt_reconciliation group by 1"
        )
    )
    expected = {*FORMAT_ACCOUNTS.values(), restated[-1], RESTATED_FOCUS_ACCOUNT}
    assert accounts.keys() == expected and len(expected) == len(FORMAT_ACCOUNTS) + 2
    ((rows,),) = focus_month.sql("select count(*) from marts.rpt_reconciliation")
    assert [accounts[FORMAT_ACCOUNTS[fmt]] for fmt in NATIVE] == [[rows, 0, 0]] * len(NATIVE)


@pytest.mark.parametrize("fmt", NATIVE)
def test_each_format_reconciles_to_the_same_bill(all_formats, focus_month, fmt):
    reference = focus_month.sql("select sum(billed_cost), count(*) from marts.rpt_reconciliation")
    got = all_formats.sql(
        "select sum(billed_cost), count(*), bool_and(is_reconciled), max(abs(billed_residual)),"
        " max(abs(effective_residual)), sum(quarantined_line_count) from marts.rpt_reconciliation"
        f" where {_account(fmt)}"
    )
    assert got == [(reference[0][0], reference[0][1], True, 0, 0, 0)]


@pytest.mark.parametrize("fmt", ["cur-legacy", "cur2"])
def test_cur_formats_give_exactly_the_focus_per_team_totals(all_formats, focus_month, fmt):
    # both ledgers survive per line, so every allocation step sees the same numbers
    assert _per_team(all_formats, _account(fmt)) == _per_team(focus_month)


@pytest.mark.parametrize("fmt", ["gcp", "oci"])
def test_hourly_single_amount_formats_place_every_non_shared_cent_the_same(
    all_formats, focus_month, fmt
):
    # GCP and OCI carry one amount per line (effective = billed), so only the spreading of shared
    # lines, which weighs owners by effective cost, may differ from the FOCUS month
    not_shared = (
        "(allocation_kind in ('direct', 'usage', 'idle') or (allocation_kind = 'unallocated'"
        " and unallocated_reason <> 'shared_cost_share_of_unallocated_cost'))"
    )
    focus = {team: money[0] for team, money in _per_team(focus_month, not_shared).items()}
    native = {
        team: money[0]
        for team, money in _per_team(all_formats, f"{_account(fmt)} and {not_shared}").items()
    }
    assert native == focus


@pytest.mark.parametrize("fmt", NATIVE)
def test_every_format_splits_claimed_disks_over_the_same_pods(all_formats, focus_month, fmt):
    # every format carries the disk's id as its resource id, so the volume_claim route is the same
    query = (
        "select resource_id, coalesce(workload_id, ''), allocation_kind, billed_cost"
        " from marts.fct_cost_allocation where line_class = 'volume_claim' and {} order by all"
    )
    focus = focus_month.sql(query.format("true"))
    # some disks go to the pods that held their claim (usage, or unallocated when that pod has no known
    # project), the unheld scratch claim to nobody
    assert {bool(workload) for _, workload, _, _ in focus} == {True, False}
    assert all_formats.sql(query.format(_account(fmt))) == focus


def test_onprem_items_depreciate_at_the_cloud_hourly_cost(small_month, all_formats):
    """Each GPU node of the bill is one hardware item with residual 0 whose hourly depreciation is
    the node's cloud hourly cost: price = hourly x 744 hours (October) x 36 months."""
    onprem_landing = all_formats.landing
    with (onprem_landing / "billing" / "onprem" / "2026-10" / "onprem_items.csv").open() as handle:
        items = list(csv.DictReader(handle))
    hourly = {}
    for line in read_focus_lines(small_month):
        if (
            line["ServiceName"] == "Amazon Elastic Compute Cloud"
            and line["ChargeCategory"] == "Usage"
        ):
            hourly[line["ResourceId"]] = Decimal(line["BilledCost"])
    assert len(items) == len(hourly) == 3  # the 2 scheduled nodes and the shared-GPU node
    for item in items:
        assert (item["item_type"], item["residual_value"], item["depreciation_months"]) == (
            "hardware",
            "0",
            "36",
        )
        instance = item["description"].split("(was ")[1].rstrip(")")
        assert Decimal(item["amount"]) == hourly[instance] * 744 * 36
    # the lines an on-prem item cannot carry (no tags, credits, tax) stay FOCUS lines
    with (onprem_landing / "billing" / "focus" / "2026-10" / "not_onprem.csv").open() as handle:
        rest = list(csv.DictReader(handle))
    assert {line["ServiceName"] for line in rest} >= {"Tax", "AWS Support (Business)"}
    assert not [line for line in rest if line["ResourceId"] in hourly]


def test_onprem_month_reconciles_and_places_every_non_shared_cent_like_focus(
    focus_month, small_month, all_formats
):
    """The on-prem month builds with residual 0. Its bill is the FOCUS bill plus the nodes' hours of
    October outside the generated day (an owned server depreciates every hour): exactly
    sum(hourly x (744 - hours billed)), all of it unallocated as no_gpu_telemetry. Every direct, usage and idle
    cent of a team is the FOCUS build's to the 1e-18 (on-prem has one amount per line, so the billed
    ledger is compared). Only the spreading of shared lines moves: it weighs owners by cost, and the
    idle server hours outside the day (two scheduled nodes and the shared-GPU H100 node, about
    $165,177) become the biggest owner, so a team's shared share shrinks. Measured on this month
    (seed 11, 2 nodes + the shared node, 1 day, $7,712.63 bill): at most $383.18 per team; asserted
    below $500 and nonzero (the move is real, not rounding)."""
    warehouse, onprem_account = all_formats, _account("onprem")  # the on-prem month's account
    ((billed, reconciled, residual, eff_residual, quarantined),) = warehouse.sql(
        "select sum(billed_cost), bool_and(is_reconciled), max(abs(billed_residual)),"
        " max(abs(effective_residual)), sum(quarantined_line_count) from marts.rpt_reconciliation"
        f" where {onprem_account}"
    )
    assert (reconciled, residual, eff_residual, quarantined) == (True, 0, 0, 0)
    node_hours: dict[str, list[Decimal]] = {}
    for line in read_focus_lines(small_month):
        if (
            line["ServiceName"] == "Amazon Elastic Compute Cloud"
            and line["ChargeCategory"] == "Usage"
        ):
            node_hours.setdefault(line["ResourceId"], []).append(Decimal(line["BilledCost"]))
    extra = sum(costs[0] * (744 - len(costs)) for costs in node_hours.values())
    ((focus_billed,),) = focus_month.sql("select sum(billed_cost) from marts.rpt_reconciliation")
    assert billed == focus_billed + extra
    ((idle_hours,),) = warehouse.sql(
        "select sum(billed_cost) from marts.fct_cost_allocation"
        f" where unallocated_reason = 'no_gpu_telemetry' and {onprem_account}"
    )
    assert idle_hours == extra

    not_shared = (
        "(allocation_kind in ('direct', 'usage', 'idle') or (allocation_kind = 'unallocated'"
        " and unallocated_reason not in ('shared_cost_share_of_unallocated_cost', 'no_gpu_telemetry')))"
    )
    focus = {team: money[0] for team, money in _per_team(focus_month, not_shared).items()}
    onprem = {
        team: money[0]
        for team, money in _per_team(warehouse, f"{onprem_account} and {not_shared}").items()
    }
    assert onprem == focus

    real = "team_id not like '\\_\\_%' escape '\\'"
    focus_all = {team: money[0] for team, money in _per_team(focus_month, real).items()}
    onprem_all = {
        team: money[0]
        for team, money in _per_team(warehouse, f"{onprem_account} and {real}").items()
    }
    assert focus_all.keys() == onprem_all.keys()
    moved = max(abs(focus_all[team] - onprem_all[team]) for team in focus_all)
    assert 0 < moved < 500


def _set_mtime(folder: Path, when: int) -> None:
    import os

    for path in folder.rglob("*"):
        os.utime(path, (when, when))


@shared_fixture
def restated(zone):
    warehouse, (bill, line_count, first, second, account) = zone
    return warehouse, bill, line_count, first, second, account


def _restated(small_month: Path, landing: Path):
    """Two restated months whose delivery folders sort the wrong way round, written into ``landing``
    (a copy of the month, whose bill ``_zone`` moves into the zone).

    - legacy CUR: assemblyId GUID folders. The first delivery lands in ``f3c1...``, the restatement
      (its first line + $10) in ``0a7e...``: by name the first would win; the report's top-level
      ``<report>-Manifest.json`` names the current assembly (as AWS writes it), and it wins.
    - FOCUS, another billing account: export-time folders. ``20261104T000000Z`` holds the
      restatement (+$7) but its files were copied earlier (file time 2026-11-01) than the older
      ``20261102T000000Z`` delivery (file time 2026-11-05): the export's own time wins.
    """
    shutil.copytree(small_month, landing)
    focus_dir = landing / "billing" / "focus"
    focus_copy = landing.parent / "restated_focus" / "focus"
    shutil.copytree(focus_dir, focus_copy)
    render_bill(landing, "cur-legacy")
    (cur_file,) = (landing / "billing" / "aws_cur").rglob("*.csv.gz")
    period = landing / "billing" / "aws_cur" / "gpucost-cur" / "20261001-20261101"
    first, second = (
        period / "f3c1b9e2-7d4a-4c55-9a0e-1b2c3d4e5f60",
        period / "0a7e4c1d-2b3f-4e5a-8c9d-0e1f2a3b4c5d",
    )
    first.mkdir(parents=True)
    shutil.move(cur_file, first / "gpucost-cur-1.csv.gz")
    with gzip.open(first / "gpucost-cur-1.csv.gz", "rt", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rows[0]["lineItem/UnblendedCost"] = str(Decimal(rows[0]["lineItem/UnblendedCost"]) + 10)
    second.mkdir(parents=True)
    with gzip.open(second / "gpucost-cur-1.csv.gz", "wt", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    _set_mtime(first, 1793577600)  # 2026-11-02
    _set_mtime(second, 1793750400)  # 2026-11-04
    (period / "gpucost-cur-Manifest.json").write_text(
        json.dumps(
            {
                "assemblyId": second.name,
                "reportKeys": [
                    f"cur/gpucost-cur/20261001-20261101/{second.name}/gpucost-cur-1.csv.gz"
                ],
            }
        ),
        encoding="utf-8",
    )

    (focus_file,) = focus_copy.rglob("*.csv")
    with focus_file.open(newline="", encoding="utf-8") as handle:
        focus_rows = [
            dict(row, BillingAccountId=RESTATED_FOCUS_ACCOUNT) for row in csv.DictReader(handle)
        ]
    export = landing / "billing" / "focus" / "BILLING_PERIOD=2026-10"
    for folder, extra, when in (
        ("20261102T000000Z", 0, 1793836800),  # older export, file time 2026-11-05
        ("20261104T000000Z", 7, 1793491200),  # newer export, file time 2026-11-01
    ):
        out = [dict(row) for row in focus_rows]
        out[0]["BilledCost"] = str(Decimal(out[0]["BilledCost"]) + extra)
        out[0]["EffectiveCost"] = str(Decimal(out[0]["EffectiveCost"]) + extra)
        (export / folder).mkdir(parents=True)
        with (export / folder / "focus.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(out[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(out)
        _set_mtime(export / folder, when)
    shutil.rmtree(focus_copy.parent)
    lines = read_focus_lines(small_month)
    (account,) = {line["BillingAccountId"] for line in lines}  # the legacy CUR's account
    bill = sum(Decimal(line["BilledCost"]) for line in lines)
    return bill, len(rows), first.name, second.name, account


def test_the_cur_manifest_names_the_newest_delivery_when_folders_do_not_sort(restated):
    warehouse, bill, line_count, first, second, account = restated
    got = warehouse.sql(
        "select sum(billed_cost), sum(bill_line_count), sum(superseded_line_count),"
        " bool_and(is_reconciled) from marts.rpt_reconciliation"
        f" where billing_account_id = '{account}'"
    )
    assert got == [(bill + 10, line_count, line_count, True)]
    history = warehouse.sql(
        "select count(*), min(quarantine_reason), max(quarantine_reason) from marts.rpt_quarantine"
        f" where source_file like '%{first}%'"
    )
    assert len(history) == 1 and history[0][0] == line_count
    assert history[0][1] == history[0][2]
    assert history[0][1].startswith("superseded_by_redelivery: ") and history[0][1].endswith(second)


def test_newest_delivery_wins_by_the_exports_own_time_over_file_time(restated):
    warehouse, bill, _, _, _, _ = restated
    got = warehouse.sql(
        "select sum(billed_cost), sum(superseded_line_count), bool_and(is_reconciled)"
        f" from marts.rpt_reconciliation where billing_account_id = '{RESTATED_FOCUS_ACCOUNT}'"
    )
    assert got[0][0] == bill + 7 and got[0][1] > 0 and got[0][2]
    ((superseded, reason),) = warehouse.sql(
        "select count(*), max(quarantine_reason) from marts.rpt_quarantine"
        " where source_file like '%20261102T000000Z%'"
    )
    assert superseded == got[0][1]
    assert reason.startswith("superseded_by_redelivery: ") and reason.endswith("20261104T000000Z")
