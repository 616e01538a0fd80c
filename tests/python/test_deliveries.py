"""Bill deliveries by each provider's layout, row-level duplicates, literal paths, hostile column names,
precision, and bad bill files that no longer stop the build (issue 19 items 1, 3, 4, 5; issue 24 item 6).

One landing zone carries every case (one `dbt build`), under a path holding `[1]`, `*` and `?`; each case
uses its own billing account so the assertions read it apart from the generated month.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.python.landing_zones import (
    WAREHOUSE_NAME,
    Warehouse,
    copy_landing,
    run_dbt,
    shared_landing,
    small_month,
)
from tests.python.test_bad_inputs import FOCUS_HEADER, line, write_focus
from tests.python.test_native_bills import CUR_COLUMNS, _azure, _cur_row, _write_csv, _write_rows

pytestmark = [pytest.mark.warehouse, pytest.mark.xdist_group("deliveries")]

D = Decimal
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "billing"
CONTRACT = SHARED / "focus_spec_examples" / "contract_commitment_scenario_1.csv"
HOSTILE_COLUMN = "x\", read_text('/etc/hostname') as \"y"
HOSTILE_TAG = 'resourceTags/user:team", (select 42) as "z'


def focus_parquet(
    path: Path, rows: list[dict[str, str]], types: dict[str, pa.DataType] | None = None
):
    """A FOCUS Parquet file: text columns, or the given Arrow types (floats, decimals, UTC timestamps)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = {}
    for name in rows[0]:
        kind = (types or {}).get(name, pa.string())
        values = [row[name] for row in rows]
        if pa.types.is_floating(kind):
            values = [float(value) for value in values]
        elif pa.types.is_decimal(kind):
            values = [D(value) for value in values]
        elif pa.types.is_timestamp(kind):
            values = [datetime.fromisoformat(value.replace("Z", "+00:00")) for value in values]
        columns[name] = pa.array(values, type=kind)
    pq.write_table(pa.table(columns), path)


def age(path: Path, seconds: float) -> None:
    """Set a file's modification time `seconds` from now (a re-sync touching an old delivery)."""
    stamp = time.time() + seconds
    os.utime(path, (stamp, stamp))


@pytest.fixture(scope="module")
def deliveries(tmp_path_factory) -> tuple[Warehouse, str]:
    root = tmp_path_factory.mktemp("deliveries")
    month, _ = shared_landing(tmp_path_factory, "small_month", small_month)
    landing = copy_landing(month, root / "land[1]*?" / "landing")
    focus = landing / "billing" / "focus"

    # a month partitioned by day (Hive style): every day folder is a part of one delivery
    day1 = [
        line("parts", BilledCost="10.00", EffectiveCost="10.00", ResourceId=f"vol-p{i}")
        for i in range(2)
    ]
    day2 = [
        line(
            "parts",
            BilledCost="10.00",
            EffectiveCost="10.00",
            ResourceId=f"vol-q{i}",
            ChargePeriodStart="2026-10-02T05:00:00Z",
            ChargePeriodEnd="2026-10-02T06:00:00Z",
        )
        for i in range(3)
    ]
    write_focus(focus / "partitioned" / "day=2026-10-01" / "part-0.csv", day1)
    write_focus(focus / "partitioned" / "day=2026-10-02" / "part-0.csv", day2)

    # one export landed as .csv, .csv.gz and .parquet: its rows count once
    # (the Parquet copy typed as exporters write it: decimals, UTC timestamps, a unit price 3.0000)
    trio = [
        line("trio", BilledCost="3.00", EffectiveCost="3.00", ResourceId="vol-t1")
        | {"ListUnitPrice": "3.00"},
        line("trio", BilledCost="4.00", EffectiveCost="4.00", ResourceId="vol-t2")
        | {"ListUnitPrice": "4"},
    ]
    csv_path = write_focus(
        focus / "trio" / "export.csv", trio, header=[*FOCUS_HEADER, "ListUnitPrice"]
    )
    with gzip.open(focus / "trio" / "export.csv.gz", "wb") as handle:
        handle.write(csv_path.read_bytes())
    money = pa.decimal128(20, 4)
    when = pa.timestamp("s", tz="UTC")
    focus_parquet(
        focus / "trio" / "export.parquet",
        trio,
        types={
            "BilledCost": money,
            "EffectiveCost": money,
            "ListUnitPrice": money,
            "ChargePeriodStart": when,
            "ChargePeriodEnd": when,
        },
    )

    # a partial re-export of the generated month under another name (its first three rows)
    export = next((focus / "2026-10").glob("focus_export_*.csv"))
    with export.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header, rows = next(reader), list(reader)
    with (focus / "2026-10" / "partial_reexport.csv").open(
        "w", newline="", encoding="utf-8"
    ) as handle:
        csv.writer(handle).writerows([header, *rows[:3]])

    # a restated month: the delivery time in its path wins, even after the original's file is touched
    original = write_focus(
        focus / "restated" / "20261102T000000Z" / "bill.csv",
        [line("restate", BilledCost="5.00", EffectiveCost="5.00")],
    )
    write_focus(
        focus / "restated" / "20261105T000000Z" / "bill.csv",
        [line("restate", BilledCost="7.00", EffectiveCost="7.00")],
    )
    age(original, 3600)
    # deliveries without a manifest or a time in their path: the folder that sorts last, never file time
    first = write_focus(
        focus / "by_name" / "2026-10" / "bill.csv",
        [line("byname", BilledCost="8.00", EffectiveCost="8.00")],
    )
    write_focus(
        focus / "by_name" / "2026-10-fixed" / "bill.csv",
        [line("byname", BilledCost="9.00", EffectiveCost="9.00")],
    )
    age(first, 3600)

    # glob characters in folder and file names are literal
    write_focus(
        focus / "odd[x]" / "*?" / "lit[1].csv",
        [line("literal", BilledCost="2.00", EffectiveCost="2.00")],
    )
    # quotes in folder and file names reach SQL only as escaped literals
    write_focus(
        focus / 'it\'s "quoted"' / 'o\'brien "q".csv',
        [line("quoted", BilledCost="4.00", EffectiveCost="4.00")],
    )

    # hostile column names: a Parquet column and a CUR tag column carrying quotes and SQL
    injected = [line("inject", BilledCost="1.00", EffectiveCost="1.00") | {HOSTILE_COLUMN: "v"}]
    focus_parquet(focus / "inject" / "inject.parquet", injected)
    cur_path = landing / "billing" / "aws_cur" / "inject" / "cur.csv"
    cur_path.parent.mkdir(parents=True)
    with cur_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=[*CUR_COLUMNS, HOSTILE_TAG])
        writer.writeheader()
        writer.writerow(_cur_row("555555555555", "Usage", "3.00", **{HOSTILE_TAG: "evil"}))

    # precision: more than 18 decimals in scientific notation; two lines whose sum overflows
    write_focus(
        focus / "precision" / "sci.csv", [line("sci", BilledCost="5e-19", EffectiveCost="5e-19")]
    )
    big = "6000000000000000000"  # 6e18: one fits the exact range (under 9e18), two do not
    write_focus(
        focus / "precision" / "big_a.csv", [line("big-a", BilledCost=big, EffectiveCost=big)]
    )
    write_focus(
        focus / "precision" / "big_b.csv", [line("big-b", BilledCost=big, EffectiveCost=big)]
    )
    # money stored as floating point in Parquet: read, with a warning naming the file
    focus_parquet(
        focus / "float" / "float_money.parquet",
        [line("float", BilledCost="2.5", EffectiveCost="2.5")],
        types={"BilledCost": pa.float64(), "EffectiveCost": pa.float64()},
    )

    # bad files: quarantined with their reason, the build goes on
    renamed = [name if name != "BilledCost" else "Billed_Cost" for name in FOCUS_HEADER]
    write_focus(
        focus / "bad" / "renamed.csv",
        [{("Billed_Cost" if k == "BilledCost" else k): v for k, v in line("renamed").items()}],
        header=renamed,
    )
    latin = focus / "bad" / "latin1.csv"
    latin.write_bytes(",".join(FOCUS_HEADER).encode() + b"\n" + "Café".encode("latin-1") + b"\n")
    (focus / "bad" / "gzipped.csv").write_bytes(gzip.compress(csv_path.read_bytes()))
    (focus / "bad" / "secret_header.csv").write_text(
        "SECRET-TOKEN-9,password=hunter3\nx,y\n", encoding="utf-8"
    )
    outside = root / "outside_secret.txt"
    outside.write_text("SECRET-TOKEN-123,password=hunter2\nx,y\n", encoding="utf-8")
    (focus / "bad" / "linked.csv").symlink_to(outside)
    inside = write_focus(
        root / "staged" / "inside.csv", [line("linkedin", BilledCost="6.00", EffectiveCost="6.00")]
    )
    shutil.move(inside, landing / "inside.csv")
    (focus / "linked_inside.csv").symlink_to(landing / "inside.csv")
    (focus / "bad" / "export.xlsx").write_bytes(b"PK\x03\x04 not read by any reader")
    # files their reader cannot read through: refused alone, the rest of the folder builds
    whole = gzip.compress(csv_path.read_bytes())
    (focus / "bad" / "truncated.csv.gz").write_bytes(whole[: len(whole) // 2])
    (landing / "billing" / "gcp").mkdir(parents=True)
    (landing / "billing" / "gcp" / "cut.json").write_text(
        '{"billing_account_id": "SECRET-TOKEN-8", "cost": 1.5, "currency": "USD"\n',
        encoding="utf-8",
    )
    (focus / "contract").mkdir()
    shutil.copyfile(CONTRACT, focus / "contract" / CONTRACT.name)

    # legacy CUR: the top-level manifest names the current assembly, whatever the file times
    period = landing / "billing" / "aws_cur" / "cur" / "20261001-20261101"
    _write_csv(period / "asm-old" / "cur-1.csv", [_cur_row("666666666666", "Usage", "9.00")])
    _write_csv(period / "asm-new" / "cur-1.csv", [_cur_row("666666666666", "Usage", "6.00")])
    (period / "asm-old" / "cur-Manifest.json").write_text(
        json.dumps(
            {"assemblyId": "asm-old", "reportKeys": ["p/cur/20261001-20261101/asm-old/cur-1.csv"]}
        )
    )
    (period / "cur-Manifest.json").write_text(
        json.dumps(
            {"assemblyId": "asm-new", "reportKeys": ["p/cur/20261001-20261101/asm-new/cur-1.csv"]}
        )
    )
    age(period / "asm-old" / "cur-1.csv", 7200)

    # Azure export runs: the run its manifest says was submitted last wins; a leftover is not read
    runs = landing / "billing" / "azure" / "gpu-export" / "20261001-20261031"
    for run, cost, submitted in (
        ("run-a", "30.00", "2026-10-06T02:00:00Z"),
        ("run-b", "40.00", "2026-10-05T02:00:00Z"),
    ):
        _write_rows(
            runs / run / "part_0_0001.csv",
            [_azure("Usage", "OnDemand", cost) | {"BillingAccountId": "az-777"}],
        )
        (runs / run / "manifest.json").write_text(
            json.dumps(
                {
                    "runInfo": {"submittedTime": submitted, "runId": run},
                    "blobs": [
                        {"blobName": f"exports/gpu-export/20261001-20261031/{run}/part_0_0001.csv"}
                    ],
                }
            )
        )
    age(runs / "run-b" / "part_0_0001.csv", 7200)
    _write_rows(
        runs / "run-a" / "part_9_9999.csv",
        [_azure("Usage", "OnDemand", "1000.00") | {"BillingAccountId": "az-777"}],
    )

    work = root / "work"
    work.mkdir()
    warehouse = Warehouse(landing=landing, path=work / WAREHOUSE_NAME, work=work)
    result = run_dbt(
        landing, warehouse.path, work, "build", "--vars", "{gpucost_default_billing_currency: USD}"
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    return warehouse, result.stdout


def billed(warehouse: Warehouse, account: str) -> tuple:
    return warehouse.sql(
        "select sum(billed_cost), sum(quarantined_billed_cost), sum(superseded_line_count),"
        " sum(duplicate_line_count), sum(duplicated_billed_cost), bool_and(is_reconciled)"
        f" from marts.rpt_reconciliation where billing_account_id = '{account}'"
    )[0]


def reasons(warehouse: Warehouse, like: str) -> list[str]:
    return [
        row[0]
        for row in warehouse.sql(
            "select quarantine_reason from marts.rpt_quarantine"
            f" where source_file like '{like}' order by source_file, source_row_number"
        )
    ]


def test_day_partitions_are_parts_of_one_delivery(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "case-parts") == (D("50"), D("0"), 0, 0, D("0"), True)


def test_one_export_in_three_formats_counts_once(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "case-trio") == (D("7"), D("0"), 0, 4, D("14"), True)
    copies = reasons(warehouse, "%/trio/%")
    assert len(copies) == 4 and all(r.startswith("duplicate_of: ") for r in copies)


def test_a_partial_re_export_adds_nothing(deliveries):
    warehouse, _ = deliveries
    export = next((warehouse.landing / "billing" / "focus" / "2026-10").glob("focus_export_*.csv"))
    with export.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    account = rows[0]["BillingAccountId"]
    total = sum(D(row["BilledCost"]) for row in rows if row["BillingAccountId"] == account)
    ((bill, duplicates, duplicated),) = warehouse.sql(
        "select sum(billed_cost), sum(duplicate_line_count), sum(duplicated_billed_cost)"
        f" from marts.rpt_reconciliation where billing_account_id = '{account}'"
    )
    assert bill == total
    assert duplicates == 3 and duplicated == sum(D(row["BilledCost"]) for row in rows[:3])


def test_a_restatement_wins_by_the_delivery_time_in_its_path_not_by_file_time(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "case-restate") == (D("7"), D("0"), 1, 0, D("0"), True)
    (reason,) = reasons(warehouse, "%20261102T000000Z%")
    assert reason.startswith("superseded_by_redelivery: ") and reason.endswith("20261105T000000Z")


def test_without_a_delivery_time_the_last_folder_by_name_wins_never_file_time(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "case-byname") == (D("9"), D("0"), 1, 0, D("0"), True)


def test_the_cur_manifest_names_the_current_assembly(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "666666666666") == (D("6"), D("0"), 1, 0, D("0"), True)


def test_azure_runs_rank_by_their_manifest_and_a_leftover_part_is_not_read(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "az-777") == (D("30"), D("0"), 1, 0, D("0"), True)
    status = warehouse.sql(
        "select file_status from staging.stg_landing__bill_files where source_file like '%part_9_9999.csv'"
    )
    assert status == [("not_in_manifest",)]


def test_glob_characters_in_paths_are_literal(deliveries):
    warehouse, _ = deliveries
    assert "[1]*?" in str(warehouse.landing)
    # telemetry too: no file of a landing dir named with [1] is taken for removed (tombstoned)
    ((files, tombstones),) = warehouse.sql(
        "select count(distinct source_file), count(case when source_file_size is null then 1 end)"
        " from staging.base_dcgm__series"
    )
    assert files == 8 and tombstones == 0
    assert warehouse.sql("select count(*) > 0 from marts.fct_gpu_usage") == [(True,)]
    assert billed(warehouse, "case-literal") == (D("2"), D("0"), 0, 0, D("0"), True)
    assert billed(warehouse, "case-quoted") == (D("4"), D("0"), 0, 0, D("0"), True)


def test_hostile_column_names_are_data_not_code(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "case-inject") == (D("1"), D("0"), 0, 0, D("0"), True)
    columns = [row[0] for row in warehouse.sql("describe staging.base_focus__exports")]
    assert HOSTILE_COLUMN in columns and "y" not in columns
    (value,) = warehouse.sql(
        f'select "{HOSTILE_COLUMN.replace(chr(34), chr(34) * 2)}" from staging.base_focus__exports'
        " where BillingAccountId = 'case-inject'"
    )
    assert value == ("v",)
    ((tags,),) = warehouse.sql(
        "select tags_raw from intermediate.int_bill_line_items where billing_account_id = '555555555555'"
    )
    assert json.loads(tags)['team", (select 42) as "z'] == "evil"
    assert billed(warehouse, "555555555555")[0] == D("3")


def test_money_finer_than_18_decimals_is_quarantined_not_rounded(deliveries):
    warehouse, _ = deliveries
    assert reasons(warehouse, "%/precision/sci.csv") == [
        "BilledCost has more than 18 decimal places: 5e-19"
    ]


def test_sums_that_would_overflow_are_quarantined_naming_the_file(deliveries):
    warehouse, _ = deliveries
    assert billed(warehouse, "case-big-a")[0] == D("6000000000000000000")
    (reason,) = reasons(warehouse, "%/precision/big_b.csv")
    assert reason.startswith("money beyond the exact range: this file holds 6000000000000000000 ")
    ((line_count, money),) = warehouse.sql(
        "select sum(quarantined_line_count), sum(billed_cost) from marts.rpt_reconciliation"
        " where billing_account_id = 'case-big-b'"
    )
    assert line_count == 1 and money == 0


def test_floating_point_money_in_parquet_warns_naming_the_file(deliveries):
    warehouse, stdout = deliveries
    assert "float_money.parquet stores money column BilledCost as floating point" in stdout
    assert billed(warehouse, "case-float")[0] == D("2.5")


@pytest.mark.parametrize(
    ("file", "status", "reason"),
    [
        (
            "renamed.csv",
            "rejected",
            "missing required column(s) BilledCost (found 16 columns, of them Billi",
        ),
        ("latin1.csv", "rejected", "not UTF-8 encoded text"),
        ("gzipped.csv", "rejected", "gzip-compressed data in a file not named .gz"),
        (
            "export.xlsx",
            "rejected",
            "not a bill file type this folder reads (.csv, .csv.gz, .parquet)",
        ),
        ("truncated.csv.gz", "rejected", "unreadable: "),
        ("cut.json", "rejected", "unreadable: "),
        (
            "contract_commitment_scenario_1.csv",
            "other_dataset",
            "not cost and usage: FOCUS Contract Commitment",
        ),
    ],
)
def test_bad_bill_files_are_quarantined_and_the_build_goes_on(deliveries, file, status, reason):
    warehouse, _ = deliveries
    rows = warehouse.sql(
        "select file_status, file_reason from staging.stg_landing__bill_files"
        f" where source_file like '%/{file}'"
    )
    assert len(rows) == 1 and rows[0][0] == status and rows[0][1].startswith(reason)
    assert [r for r in reasons(warehouse, f"%/{file}") if r.startswith(reason)]


def test_a_symlink_out_of_the_landing_zone_is_refused_one_inside_is_read(deliveries):
    warehouse, _ = deliveries
    rows = warehouse.sql(
        "select file_status, file_reason from staging.stg_landing__bill_files where source_file like '%/linked.csv'"
    )
    assert rows == [
        ("rejected", "a symbolic link whose target is outside the landing zone: refused, not read")
    ]
    assert billed(warehouse, "case-linkedin")[0] == D("6")


def test_no_message_echoes_a_landed_file_s_content(deliveries):
    warehouse, stdout = deliveries
    secret = warehouse.landing / "billing" / "focus" / "bad" / "secret_header.csv"
    assert warehouse.sql(
        f"select file_reason from staging.stg_landing__bill_files where source_file like '%/{secret.name}'"
    ) == [
        (
            "missing required column(s) BilledCost, EffectiveCost, BillingPeriodStart,"
            " ChargePeriodStart, ChargePeriodEnd (found 2 columns, none a known focus column)",
        )
    ]
    quarantine = warehouse.sql(
        "select string_agg(quarantine_reason || example_value, ' ') from marts.rpt_quarantine"
    )
    assert "SECRET" not in quarantine[0][0] and "hunter" not in quarantine[0][0]
    assert "SECRET" not in stdout and "hunter" not in stdout


def test_every_bill_still_reconciles(deliveries):
    warehouse, _ = deliveries
    assert warehouse.sql(
        "select count(*) from marts.rpt_reconciliation where not is_reconciled"
    ) == [(0,)]
