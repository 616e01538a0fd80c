"""The bad-input battery: every malformed input ends in an exact, explained outcome.

Each case lands beside a small generated month and asserts what happens to it: a clear build error
naming the file, or a quarantine row with the reason, or the exact allocation; and in every build
that succeeds, the bill still reconciles to the cent (bill = allocated + quarantined).

Cases that cannot interact share a build, so the suite makes three (each about 28 s of CPU) besides
the session's small month (``small_month_warehouse``, the clean reference):

- ``bill_cases``: every bad or odd bill line (each under its own billing account ``case-<name>``),
  a resent and an empty bill file, and a truncated DCGM file (telemetry: it moves GPU time, which no
  bill case reads);
- ``telemetry_cases``: bad telemetry samples and a duplicated scrape, whose money must equal the
  reference's to the 1e-18 (so no bill case may land beside them);
- ``redelivered_and_skewed``: the month's bill delivered again (restated), and every DCGM sample 7 s
  off the step grid: the one changes only the bill, the other only the telemetry's timestamps, and
  each asserts only its own side (the bill's totals; the GPU time of the month).
"""

from __future__ import annotations

import csv
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest

from tests.python.landing_zones import (
    WAREHOUSE_NAME,
    Warehouse,
    copy_landing,
    run_dbt,
    small_month_landing,
    small_month_warehouse,
)

pytestmark = pytest.mark.warehouse

D = Decimal
FOCUS_HEADER = [
    "BillingAccountId", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd",
    "ChargePeriodStart", "ChargePeriodEnd", "ChargeCategory", "ChargeDescription", "ProviderName",
    "ServiceName", "ServiceCategory", "ResourceId", "BilledCost", "EffectiveCost", "InvoiceId", "Tags",
]  # fmt: skip


def line(case: str, **overrides: str) -> dict[str, str]:
    row = {
        "BillingAccountId": f"case-{case}",
        "BillingCurrency": "USD",
        "BillingPeriodStart": "2026-10-01T00:00:00Z",
        "BillingPeriodEnd": "2026-11-01T00:00:00Z",
        "ChargePeriodStart": "2026-10-01T05:00:00Z",
        "ChargePeriodEnd": "2026-10-01T06:00:00Z",
        "ChargeCategory": "Usage",
        "ChargeDescription": "EBS gp3 volume",
        "ProviderName": "AWS",
        "ServiceName": "Amazon Elastic Block Store",
        "ServiceCategory": "Storage",
        "ResourceId": f"vol-{case}",
        "BilledCost": "1.00",
        "EffectiveCost": "1.00",
        "InvoiceId": "INV-CASES",
        "Tags": "",
    }
    row.update(overrides)
    return row


def write_focus(path: Path, rows: list[dict[str, str]], header: list[str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = header or FOCUS_HEADER
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def tiny_month(tmp_path_factory) -> Path:
    # the month of test_bill_formats (without Slurm), so the clean base build below is shared with it
    return small_month_landing(tmp_path_factory)


def landing_copy(tiny_month: Path, tmp_path: Path) -> Path:
    return copy_landing(tiny_month, tmp_path / "landing")


def build(landing: Path, work: Path, *extra: str):
    work.mkdir(parents=True, exist_ok=True)
    warehouse = Warehouse(landing=landing, path=work / WAREHOUSE_NAME, work=work)
    return warehouse, run_dbt(landing, warehouse.path, work, "build", *extra)


def month_folder(landing: Path) -> Path:
    return landing / "billing" / "focus" / "2026-10"


# --- bill rows: one build, many cases ------------------------------------------------------------


@pytest.fixture(scope="module")
def bill_cases_build(tiny_month, tmp_path_factory) -> tuple[Warehouse, str, Path]:
    """The bill cases' build: its warehouse, dbt's output and the truncated telemetry file."""
    tmp = tmp_path_factory.mktemp("bill_cases")
    landing = landing_copy(tiny_month, tmp)
    folder = month_folder(landing)
    with (landing / "reference" / "org_mapping.csv").open(encoding="utf-8") as handle:
        known_project = next(csv.DictReader(handle))["project_id"]
    cases = {
        "abc": [line("abc", BilledCost="abc")],
        "empty": [line("empty", BilledCost="")],
        "nan": [line("nan", BilledCost="NaN", EffectiveCost="NaN")],
        "inf": [line("inf", BilledCost="Inf", EffectiveCost="-Infinity")],
        "dash": [line("dash", EffectiveCost="-")],
        "sci": [line("sci", BilledCost="1.5E-3", EffectiveCost="2e-4")],
        "dec18": [
            line("dec18", BilledCost="0.123456789012345678", EffectiveCost="0.123456789012345678")
        ],
        "dec19": [line("dec19", BilledCost="0.1234567890123456789")],
        "huge": [
            line(
                "huge", BilledCost="12345678901234567890.5", EffectiveCost="12345678901234567890.5"
            )
        ],
        "overflow": [line("overflow", BilledCost="1e21", EffectiveCost="1e21")],
        "nozone": [
            line(
                "nozone",
                ChargePeriodStart="2026-10-01 05:00:00",
                ChargePeriodEnd="2026-10-01 06:00:00",
            )
        ],
        "offset": [
            line(
                "offset",
                ChargePeriodStart="2026-10-01T07:00:00+02:00",
                ChargePeriodEnd="2026-10-01T08:00:00+02:00",
            )
        ],
        "offset00": [
            line(
                "offset00",
                ChargePeriodStart="2026-10-01 05:00:00+00",
                ChargePeriodEnd="2026-10-01 06:00:00+00",
            )
        ],
        "hour30": [
            line(
                "hour30",
                ChargePeriodStart="2026-10-01T30:00:00Z",
                BilledCost="2.50",
                EffectiveCost="2.50",
            )
        ],
        "backwards": [
            line(
                "backwards",
                ChargePeriodStart="2026-10-01T06:00:00Z",
                ChargePeriodEnd="2026-10-01T05:00:00Z",
            )
        ],
        "dst": [
            line(
                "dst",
                ChargePeriodStart="2026-03-29T01:00:00+01:00",
                ChargePeriodEnd="2026-03-29T03:00:00+02:00",
            )
        ],
        "badccy": [line("badccy", BillingCurrency="US$")],
        "eur": [line("eur", BillingCurrency="EUR", BilledCost="7.77", EffectiveCost="7.00")],
        "lowerccy": [line("lowerccy", BillingCurrency="usd")],
        "case": [line("case", Tags=json.dumps({"project_id": known_project.upper()}))],
        "sqli": [
            line(
                "sqli",
                Tags=json.dumps({"project_id": "x'); drop table marts.fct_cost_allocation; --"}),
            )
        ],
        "jinja": [
            line("jinja", Tags=json.dumps({"project_id": "{{ var('gpucost_idle_policy') }}"}))
        ],
        "newline": [line("newline", Tags=json.dumps({"project_id": 'multi\nline "quoted"'}))],
        "notjson": [line("notjson", Tags="project_id=foo")],
        "dupes": [line("dupes", BilledCost="3.33"), line("dupes", BilledCost="3.33")],
        "refund": [
            line("refund", ChargeCategory="Credit", BilledCost="-5.55", EffectiveCost="-5.55")
        ],
        "overlap": [
            line(
                "overlap",
                ChargePeriodStart="2026-10-01T05:00:00Z",
                ChargePeriodEnd="2026-10-01T07:00:00Z",
            ),
            line(
                "overlap",
                ChargePeriodStart="2026-10-01T06:00:00Z",
                ChargePeriodEnd="2026-10-01T08:00:00Z",
            ),
        ],
    }
    for name, rows in cases.items():
        write_focus(folder / f"case_{name}.csv", rows)
    # schema drift that must load: an extra column, and optional columns missing
    write_focus(
        folder / "case_extra.csv",
        [line("extra") | {"x_Custom": "hello"}],
        header=[*FOCUS_HEADER, "x_Custom"],
    )
    write_focus(
        folder / "case_minimal.csv",
        [line("minimal")],
        header=[c for c in FOCUS_HEADER if c not in ("Tags", "InvoiceId", "ServiceName")],
    )
    # encodings and dialects that must load: a UTF-8 BOM, a semicolon delimiter
    bom = folder / "case_bom.csv"
    write_focus(bom, [line("bom")])
    bom.write_bytes(b"\xef\xbb\xbf" + bom.read_bytes())
    semi = folder / "case_semicolon.csv"
    rows = [FOCUS_HEADER, [line("semicolon")[c] for c in FOCUS_HEADER]]
    semi.write_text("\n".join(";".join(r) for r in rows) + "\n", encoding="utf-8")
    # an empty file (0 bytes) holds no lines and is skipped
    (folder / "case_zero_bytes.csv").write_bytes(b"")
    # the same bill file landed twice under another name is read once
    original = sorted(folder.glob("focus_export_*.csv"))[0]
    shutil.copyfile(original, folder / "resent_copy_of_export.csv")
    # a truncated telemetry file (test_truncated_json_is_quarantined_naming_the_file): it takes GPU
    # time out of the month, which no bill case's assertion reads (each reads its own account's
    # storage lines, the files' rows, or reconciliation, which telemetry cannot break)
    truncated = sorted((landing / "metrics" / "dcgm").rglob("DCGM_FI_DEV_GPU_UTIL.json"))[0]
    truncated.write_text(truncated.read_text()[:500])

    warehouse, result = build(landing, tmp / "work")
    assert result.returncode == 0, result.stdout[-6000:]
    return warehouse, result.stdout, truncated


@pytest.fixture(scope="module")
def bill_cases(bill_cases_build) -> Warehouse:
    return bill_cases_build[0]


def quarantine_reasons(warehouse: Warehouse, case: str) -> list[str]:
    rows = warehouse.sql(
        "select quarantine_reason from marts.rpt_quarantine"
        f" where source_file like '%case_{case}.csv' order by source_row_number"
    )
    return [reason for (reason,) in rows]


def allocated(warehouse: Warehouse, case: str) -> tuple[Decimal, Decimal, int]:
    ((billed, effective, rows),) = warehouse.sql(
        "select sum(billed_cost), sum(effective_cost), count(distinct charge_id)"
        f" from marts.fct_cost_allocation where billing_account_id = 'case-{case}'"
    )
    return billed, effective, rows


def reasons_of(warehouse: Warehouse, case: str) -> set[str]:
    rows = warehouse.sql(
        "select distinct unallocated_reason from marts.fct_cost_allocation"
        f" where billing_account_id = 'case-{case}' and unallocated_reason is not null"
    )
    return {reason for (reason,) in rows}


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("abc", "unparseable BilledCost: abc"),
        ("empty", "unparseable BilledCost: <null>"),
        ("nan", "unparseable BilledCost: NaN"),
        ("inf", "unparseable BilledCost: Inf"),
        ("dash", "unparseable EffectiveCost: -"),
        ("dec19", "BilledCost has more than 18 decimal places: 0.1234567890123456789"),
        ("overflow", "unparseable BilledCost: 1e21"),
        ("badccy", "invalid BillingCurrency"),
    ],
)
def test_unusable_money_is_quarantined_with_its_reason(bill_cases, case, reason):
    assert quarantine_reasons(bill_cases, case) == [reason]
    assert allocated(bill_cases, case)[2] == 0  # not allocated, and not lost: it is in quarantine


def test_money_beyond_the_exact_range_is_quarantined_with_its_reason(bill_cases):
    # 1.2e19 fits DECIMAL(38, 18) but not the allocation's 64-bit whole units: held out, never a crash
    (reason,) = quarantine_reasons(bill_cases, "huge")
    assert reason.startswith("money beyond the exact range: this file holds 1234567890123456")
    assert reason.endswith(
        "must total under 9e18 (the allocation splits whole units as 64-bit integers)"
    )
    assert allocated(bill_cases, "huge")[2] == 0


@pytest.mark.parametrize(
    ("case", "billed", "effective"),
    [
        ("sci", "0.0015", "0.0002"),
        ("dec18", "0.123456789012345678", "0.123456789012345678"),
        ("lowerccy", "1.00", "1.00"),
        ("dupes", "6.66", "2.00"),  # two identical lines are two charges
        ("refund", "-5.55", "-5.55"),
        ("overlap", "2.00", "2.00"),
        ("extra", "1.00", "1.00"),
        ("minimal", "1.00", "1.00"),
        ("bom", "1.00", "1.00"),
        ("semicolon", "1.00", "1.00"),
    ],
)
def test_odd_but_valid_money_is_allocated_exactly(bill_cases, case, billed, effective):
    got_billed, got_effective, _ = allocated(bill_cases, case)
    assert (got_billed, got_effective) == (D(billed), D(effective))


def test_refund_shares_are_never_positive(bill_cases):
    ((positive,),) = bill_cases.sql(
        "select count(*) from marts.fct_cost_allocation"
        " where billing_account_id = 'case-refund' and billed_cost > 0"
    )
    assert positive == 0


@pytest.mark.parametrize("case", ["nozone", "offset", "offset00"])
def test_timestamps_without_zone_are_utc_and_offsets_are_converted(bill_cases, case):
    rows = bill_cases.sql(
        "select distinct cast(charge_period_start_at as varchar) from marts.fct_cost_allocation"
        f" where billing_account_id = 'case-{case}'"
    )
    assert rows == [("2026-10-01 05:00:00",)]


def test_a_dst_day_period_is_one_real_hour(bill_cases):
    rows = bill_cases.sql(
        "select distinct cast(charge_period_start_at as varchar), cast(charge_period_end_at as varchar)"
        " from marts.fct_cost_allocation where billing_account_id = 'case-dst'"
    )
    assert rows == [("2026-03-29 00:00:00", "2026-03-29 01:00:00")]


@pytest.mark.parametrize(
    ("case", "reason_prefix"),
    [
        ("hour30", "invalid_charge_period: 2026-10-01T30:00:00Z"),
        ("backwards", "invalid_charge_period: end not after start"),
    ],
)
def test_impossible_periods_keep_their_money_as_unallocated(bill_cases, case, reason_prefix):
    (reason,) = reasons_of(bill_cases, case)
    assert reason.startswith(reason_prefix)
    billed, _, lines = allocated(bill_cases, case)
    assert lines == 1 and billed == (D("2.50") if case == "hour30" else D("1.00"))


def test_a_project_id_in_another_case_is_the_same_project(bill_cases):
    rows = bill_cases.sql(
        "select allocation_kind, project_id = lower(project_id) from marts.fct_cost_allocation"
        " where billing_account_id = 'case-case'"
    )
    assert rows == [("direct", True)]


@pytest.mark.parametrize(
    ("case", "value"),
    [
        ("sqli", "x'); drop table marts.fct_cost_allocation; --"),
        ("jinja", "{{ var('gpucost_idle_policy') }}"),
        ("newline", 'multi\nline "quoted"'),
    ],
)
def test_hostile_tag_values_are_data_not_code(bill_cases, case, value):
    # unknown project ids (an org mapping exists): kept verbatim in the reason, never executed
    assert reasons_of(bill_cases, case) == {f"unknown_project_tag: {value}"}
    assert bill_cases.sql("select count(*) from marts.fct_cost_allocation")[0][0] > 0


def test_tags_that_are_not_json_count_as_untagged(bill_cases):
    kinds = bill_cases.sql(
        "select distinct line_class from marts.fct_cost_allocation where billing_account_id = 'case-notjson'"
    )
    assert kinds == [("shared",)]


def test_currencies_are_never_mixed(bill_cases):
    rows = bill_cases.sql(
        "select billing_currency, billed_cost, is_reconciled from marts.rpt_reconciliation"
        " where billing_account_id = 'case-eur'"
    )
    assert rows == [("EUR", D("7.77"), True)]
    ((eur_statements,),) = bill_cases.sql(
        "select sum(billed_cost) from marts.fct_chargeback_monthly where billing_currency = 'EUR'"
    )
    assert eur_statements == D("7.77")


def test_a_duplicate_file_and_an_empty_file_change_nothing(bill_cases):
    files = dict(
        bill_cases.sql(
            "select regexp_extract(source_file, '[^/]+$'), duplicate_of_file from staging.stg_landing__files"
            " where source_kind = 'billing/focus'"
        )
    )
    original = next(name for name in files if name.startswith("focus_export_"))
    assert files[original] is None  # sorts first by path, so it is the one read
    assert files["resent_copy_of_export.csv"].endswith(original)
    assert files["case_zero_bytes.csv"] is None
    # both are read; the copy's rows are duplicates (counted once, in rpt_quarantine with their money)
    ((lines, copies),) = bill_cases.sql(
        "select count(case when not is_superseded then 1 end),"
        " count(case when is_duplicate and source_file like '%resent_copy%' then 1 end)"
        " from staging.stg_focus__charges where source_file like '%focus_export_%'"
        " or source_file like '%resent_copy%'"
    )
    with next(month_folder(bill_cases.landing).glob("focus_export_*.csv")).open() as handle:
        assert lines == copies == sum(1 for _ in handle) - 1
    assert bill_cases.sql(
        "select file_status from staging.stg_landing__bill_files where source_file like '%case_zero_bytes.csv'"
    ) == [("empty",)]


def test_every_case_build_still_reconciles(bill_cases):
    rows = bill_cases.sql(
        "select billing_account_id, billed_residual, effective_residual from marts.rpt_reconciliation"
        " where not is_reconciled"
    )
    assert rows == []
    ((quarantined,),) = bill_cases.sql(
        "select sum(quarantined_line_count) from marts.rpt_reconciliation where billing_account_id like 'case-%'"
    )
    assert quarantined == 9  # the eight unusable-money cases above and the huge one, one line each


# --- inputs that must stop the build with a clear message ----------------------------------------


# A file that is not UTF-8, or lacks a required column, no longer stops the build: it is quarantined
# with its reason while the good files build (tests/python/test_deliveries.py, one shared build).


def test_truncated_json_is_quarantined_naming_the_file(bill_cases_build):
    """A truncated telemetry file no longer stops the build (issue 24): it is a row of rpt_quarantine
    with the file and the reason, and the build warns (docs/telemetry-inputs.md). It lands with the
    bill cases (bill_cases_build), so the warning must count its file with theirs."""
    warehouse, stdout, source = bill_cases_build
    rows = warehouse.sql("select source_file, quarantine_reason from marts.rpt_quarantine")
    assert (str(source), "unparseable JSON (truncated, or not JSON)") in rows
    ((files,),) = warehouse.sql("select count(distinct source_file) from marts.rpt_quarantine")
    (warning,) = [text for text in stdout.splitlines() if "QUARANTINE:" in text]
    assert f" records in {files} file(s), holding " in warning


# --- telemetry: quarantine, dedup, and exact reconciliation --------------------------------------


def prom(metric: dict[str, str], values: list[list]) -> dict:
    return {
        "status": "success",
        "data": {"resultType": "matrix", "result": [{"metric": metric, "values": values}]},
    }


@pytest.fixture(scope="module")
def telemetry_cases(tiny_month, tmp_path_factory) -> tuple[Warehouse, Warehouse]:
    tmp = tmp_path_factory.mktemp("telemetry_cases")
    base = small_month_warehouse(tmp_path_factory)  # tiny_month as landed, built once a session
    landing = landing_copy(tiny_month, tmp)
    dcgm = sorted((landing / "metrics" / "dcgm").iterdir())[0]  # the cluster folder
    cases = dcgm / "cases"
    cases.mkdir()
    gpu = {
        "__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-cases-0000",
        "Hostname": "ghost-node", "modelName": "NVIDIA H100 80GB HBM3",
    }  # fmt: skip
    t0 = 1790000000
    files = {
        "no_node": prom({k: v for k, v in gpu.items() if k != "Hostname"}, [[t0, "50"]]),
        "nan_value": prom(gpu, [[t0, "NaN"], [t0 + 60, "+Inf"]]),
        "util_250": prom(gpu, [[t0, "250"]]),
        "negative_fb": prom(gpu | {"__name__": "DCGM_FI_DEV_FB_USED"}, [[t0, "-5"]]),
        "year_1970": prom(gpu, [[60, "10"]]),
        "ratio_2": prom(gpu | {"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}, [[t0, "2.5"]]),
        # the energy counter (mJ) resets when the exporter restarts: not a usage signal, moves no money
        "energy_reset": prom(
            gpu | {"__name__": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
            [[t0, "912345678"], [t0 + 900, "912999999"], [t0 + 1800, "1200"]],
        ),
        # a valid GPU series on a node no bill line or kube node knows: usable telemetry, no money
        "unknown_uuid": prom(gpu | {"UUID": "GPU-never-seen"}, [[t0, "40"], [t0 + 900, "41"]]),
    }
    for name, doc in files.items():
        (cases / f"{name}.json").write_text(json.dumps(doc))
    # a duplicated scrape: every DCGM and kube file of one day landed twice
    for kind in ("dcgm", "kube"):
        for source in sorted((landing / "metrics" / kind).rglob("*.json")):
            if "cases" not in source.parts:
                shutil.copyfile(source, source.with_name(source.stem + ".rescrape.json"))
    kube = sorted((landing / "metrics" / "kube").iterdir())[0]
    (kube / "negative_request.json").write_text(
        json.dumps(
            prom(
                {
                    "__name__": "kube_pod_container_resource_requests", "namespace": "x",
                    "pod": "p", "uid": "u", "node": "n", "resource": "nvidia_com_gpu",
                    "unit": "integer",
                },
                [[t0, "-1"]],
            )
        )
    )  # fmt: skip
    warehouse, result = build(landing, tmp / "cases")
    assert result.returncode == 0, result.stdout[-6000:]
    return base, warehouse


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        ("no_node.json", "GPU series with no node (no Hostname / hostname label)"),
        ("nan_value.json", "non-numeric sample value: +Inf"),
        ("nan_value.json", "non-numeric sample value: NaN"),
        ("util_250.json", "GPU_UTIL above 100: 250"),
        ("negative_fb.json", "negative value: -5"),
        ("year_1970.json", "timestamp out of range: 60"),
        ("ratio_2.json", "PROF_GR_ENGINE_ACTIVE above 1: 2.5"),
        ("negative_request.json", "negative value: -1"),
    ],
)
def test_bad_telemetry_is_quarantined_with_its_reason(telemetry_cases, file, reason):
    _, cases = telemetry_cases
    rows = cases.sql(
        "select quarantine_reason, record_count from marts.rpt_quarantine"
        f" where source_file like '%/{file}'"
    )
    assert (reason, 1) in rows


def test_unknown_gpus_are_usable_but_move_no_money(telemetry_cases):
    _, cases = telemetry_cases
    assert cases.sql(
        "select count(*) > 0 from staging.stg_dcgm__gpu_samples where gpu_uuid = 'GPU-never-seen'"
    ) == [(True,)]
    assert cases.sql("select count(*) from marts.fct_gpu_usage where node_name = 'ghost-node'") == [
        (0,)
    ]


def test_duplicated_scrapes_and_quarantined_samples_change_no_money(telemetry_cases):
    base, cases = telemetry_cases
    query = (
        "select team_id, project_id, allocation_kind, sum(billed_cost), sum(effective_cost)"
        " from marts.fct_cost_allocation group by all order by all"
    )
    assert cases.sql(query) == base.sql(query)
    usage = (
        "select sum(gpu_ms), sum(used_gpu_ms), sum(requested_gpu_ms) from intermediate.int_gpu_usage_hourly"
        " where node_name <> 'ghost-node'"  # the unknown GPU's own time is real, just unbilled
    )
    assert cases.sql(usage) == base.sql(usage)


@pytest.fixture(scope="module")
def redelivered_and_skewed(tiny_month, tmp_path_factory) -> tuple[Warehouse, Decimal, int]:
    """The month's bill delivered again with its first line restated (+$10), and the exporter's clock
    7 s behind (every DCGM sample off the step grid), in one build: the redelivery changes only bill
    files, the skew only telemetry timestamps, and GPU time (int_gpu_usage_hourly) reads no bill.
    Returns the warehouse, the restated bill's total and the first delivery's line count."""
    tmp = tmp_path_factory.mktemp("redelivered_and_skewed")
    landing = landing_copy(tiny_month, tmp)
    first = month_folder(landing)
    export = sorted(first.glob("focus_export_*.csv"))[0]
    with export.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    header = list(rows[0])
    restated = [dict(row) for row in rows]
    restated[0]["BilledCost"] = str(D(restated[0]["BilledCost"]) + D("10"))  # the restatement
    write_focus(first.parent / "2026-10-redelivered" / export.name, restated, header=header)
    # the exporter's clock runs 7 s behind: every DCGM sample lands off the step grid
    for path in sorted((landing / "metrics" / "dcgm").rglob("*.json")):
        document = json.loads(path.read_text())
        for series in document["data"]["result"]:
            series["values"] = [[stamp - 7, value] for stamp, value in series["values"]]
        path.write_text(json.dumps(document))
    warehouse, result = build(landing, tmp / "work")
    assert result.returncode == 0, result.stdout[-4000:]
    return warehouse, sum(D(row["BilledCost"]) for row in restated), len(rows)


def test_a_redelivered_month_replaces_the_earlier_delivery(redelivered_and_skewed):
    warehouse, expected, lines = redelivered_and_skewed
    ((billed, allocated, superseded, reconciled),) = warehouse.sql(
        "select sum(billed_cost), sum(allocated_billed_cost), sum(superseded_line_count),"
        " bool_and(is_reconciled) from marts.rpt_reconciliation"
    )
    assert (billed, allocated, superseded, reconciled) == (expected, expected, lines, True)
    reasons = warehouse.sql(
        "select distinct quarantine_reason from marts.rpt_quarantine where source_kind = 'billing/focus'"
    )
    assert len(reasons) == 1 and reasons[0][0].startswith("superseded_by_redelivery: ")
    assert reasons[0][0].endswith("2026-10-redelivered")


def test_a_skewed_exporter_clock_keeps_gpu_time_and_reconciles(
    redelivered_and_skewed, tmp_path_factory
):
    # the exporter's clock runs 7 s behind (redelivered_and_skewed): same GPU time as the month as
    # landed (the session's small month), a few seconds earlier
    skewed, _, _ = redelivered_and_skewed
    base = small_month_warehouse(tmp_path_factory)
    total = "select sum(gpu_ms), sum(used_gpu_ms) from intermediate.int_gpu_usage_hourly"
    assert skewed.sql(total) == base.sql(total)
    assert skewed.sql("select bool_and(is_reconciled) from marts.rpt_reconciliation") == [(True,)]
