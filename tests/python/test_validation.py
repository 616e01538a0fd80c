"""Great Expectations validation of the landing zone (gpucost.validation.validate, gpucost.validation.expectations).

The generated month and the real FOCUS sample pass; broken copies fail with the file, the column
and the rule named. Broken inputs are small copies in tmp (the session's landing is never changed).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from gpucost.validation.validate import Failure, ValidationReport, validate_landing
from tests.python.conftest import REAL_FOCUS
from tests.python.landing_zones import native_landing

os.environ["GX_ANALYTICS_ENABLED"] = "false"

SUITES = [
    "focus_exports",
    "bills_aws_cur",
    "bills_azure",
    "bills_gcp",
    "bills_oci",
    "bills_onprem",
    "dcgm_responses",
    "dcgm_samples",
    "kube_responses",
    "kube_samples",
    "reference_org_mapping",
]


# FOCUS rules: row count, 6 required columns (the build's var gpucost_required_bill_columns.focus and
# BillingCurrency) x exists and not null, 2 money patterns, the currency, 3 timestamps, the period
# order, the charge category and the tags
FOCUS_RULES = 22


@contextlib.contextmanager
def network_blocked(attempts: list):
    """Refuse (and record) every outbound connection or DNS lookup made inside the block."""
    saved = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def refuse(*args, **kwargs):
        attempts.append(args[1:] if len(args) > 1 else args)
        raise OSError("network access blocked by test_validation")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.getaddrinfo = refuse
    try:
        yield
    finally:
        socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = saved


@pytest.fixture(scope="module")
def good_run(generated_month, tmp_path_factory):
    landing, summary = generated_month
    docs = tmp_path_factory.mktemp("validation") / "data_docs"
    attempts: list = []
    with network_blocked(attempts):
        report = validate_landing(landing, docs)
    return report, summary, docs, attempts


def focus_file(landing: Path) -> Path:
    return next((landing / "billing" / "focus").rglob("*.csv"))


def dcgm_file(landing: Path, metric: str = "DCGM_FI_DEV_GPU_UTIL") -> Path:
    return sorted((landing / "metrics" / "dcgm").rglob(f"{metric}.json"))[0]


def small_landing(generated_month, tmp_path: Path, *, dcgm: bool = False) -> Path:
    """A copy of the generated bill (and one day of one cluster's GPU_UTIL when ``dcgm``)."""
    source, _ = generated_month
    landing = tmp_path / "landing"
    bill = focus_file(source)
    target = landing / bill.relative_to(source)
    target.parent.mkdir(parents=True)
    shutil.copyfile(bill, target)
    if dcgm:
        metrics = dcgm_file(source)
        target = landing / metrics.relative_to(source)
        target.parent.mkdir(parents=True)
        shutil.copyfile(metrics, target)
    return landing


def rewrite_csv(path: Path, change) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows, columns = change(rows, list(rows[0]))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows({column: row[column] for column in columns} for row in rows)


def only(report: ValidationReport, rule: str, column: str | None = None) -> Failure:
    """The single error of this rule (and column); fails listing all errors otherwise."""
    found = [
        failure
        for failure in report.errors
        if failure.rule == rule and (column is None or failure.column == column)
    ]
    assert len(found) == 1, report.summary()
    return found[0]


def suite(report: ValidationReport, name: str):
    return next(result for result in report.suites if result.suite == name)


# --- good inputs -------------------------------------------------------------------------------


def test_generated_month_passes_every_suite(good_run):
    report, summary, _, _ = good_run
    assert report.success, report.summary()
    assert report.failures == []
    assert [result.suite for result in report.suites] == SUITES
    assert all(
        result.status == ("skipped" if result.suite.startswith("bills_") else "passed")
        for result in report.suites
    ), report.summary()
    assert suite(report, "focus_exports").rows == summary["bill_lines"] > 0
    assert suite(report, "dcgm_samples").rows == summary["samples"] > 0
    # 4 DCGM fields x (2 clusters + the Slurm queue) x 3 days; 8 + 4 (volume) kube metrics x 2 clusters
    # x 3 days.
    assert suite(report, "dcgm_responses").files == 36
    assert suite(report, "kube_responses").files == 72
    assert suite(report, "focus_exports").passed == FOCUS_RULES
    assert suite(report, "dcgm_samples").passed == 12
    assert suite(report, "kube_samples").passed == 15


def test_validation_never_touches_the_network(good_run):
    _, _, _, attempts = good_run
    assert attempts == []


def test_data_docs_are_written_as_local_html(good_run):
    report, _, docs, _ = good_run
    assert report.docs_index == docs / "index.html"
    index = report.docs_index.read_text(encoding="utf-8")
    ran = [result.suite for result in report.suites if not result.skipped]  # no native bills here
    assert ran == [name for name in SUITES if not name.startswith("bills_")]
    for name in ran:
        assert name in index
        assert (docs / "expectations" / f"{name}.html").is_file()
    pages = list((docs / "validations").rglob("*.html"))
    assert len(pages) == len(ran)
    focus_page = next(page for page in pages if "focus_exports" in page.parts)
    assert "BillingCurrency is a 3-letter ISO 4217 code" in focus_page.read_text(encoding="utf-8")
    for page in [*docs.rglob("*.html"), *docs.rglob("*.css")]:
        assert "great-expectations-web-assets" not in page.read_text(encoding="utf-8"), page


def test_real_focus_sample_passes(tmp_path):
    landing = tmp_path / "landing"
    (landing / "billing" / "focus").mkdir(parents=True)
    shutil.copyfile(REAL_FOCUS, landing / "billing" / "focus" / REAL_FOCUS.name)
    report = validate_landing(landing)
    assert report.success, report.summary()
    focus = suite(report, "focus_exports")
    assert (focus.files, focus.rows, focus.passed, focus.failed) == (1, 1000, FOCUS_RULES, 0)
    assert [result.status for result in report.suites[1:]] == ["skipped"] * 10


def test_typed_parquet_export_passes(generated_month, tmp_path):
    import duckdb

    landing = tmp_path / "landing"
    target = landing / "billing" / "focus" / "2026-10" / "export.parquet"
    target.parent.mkdir(parents=True)
    with duckdb.connect() as con:
        con.execute(
            f"""
            copy (
                select * replace (
                    cast("BilledCost" as decimal(38, 10)) as "BilledCost",
                    cast(replace(replace("ChargePeriodStart", 'T', ' '), 'Z', '') as timestamp)
                        as "ChargePeriodStart"
                )
                from read_csv('{focus_file(generated_month[0])}', all_varchar = true)
            ) to '{target}' (format parquet)
            """
        )
    report = validate_landing(landing)
    assert report.success, report.summary()
    assert suite(report, "focus_exports").rows == generated_month[1]["bill_lines"]


def test_sampled_dcgm_check_says_so(generated_month):
    report = validate_landing(generated_month[0], sample_rows=10_000)
    assert report.success, report.summary()
    samples = suite(report, "dcgm_samples")
    # the files' rows, of which a sample was checked: about 10,000 rows' worth of whole series
    assert samples.rows == generated_month[1]["samples"]
    share = int(samples.note.removeprefix("sampled: every sample of ").split("%")[0])
    assert 0 < share < 100 and share == pytest.approx(100 * 10_000 / samples.rows, abs=5)
    assert samples.note in report.summary()


# --- broken inputs -----------------------------------------------------------------------------


def test_unparseable_billed_cost_names_file_row_and_rule(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path)
    bill = focus_file(landing)

    def break_row(rows, columns):
        rows[4]["BilledCost"] = "abc"
        return rows, columns

    rewrite_csv(bill, break_row)
    report = validate_landing(landing)
    assert not report.success
    failure = only(report, "expect_column_values_to_match_regex", "BilledCost")
    assert failure.file == "billing/focus/2026-10/focus_export_323437494771.csv"
    assert failure.unexpected_count == 1
    assert failure.examples == ["row 5: BilledCost='abc'"]
    assert len(report.errors) == 1
    assert suite(report, "focus_exports").failed == 1


def test_missing_billing_currency_column(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path)
    broken = focus_file(landing)
    # A second, intact export: only the file without the column is named.
    shutil.copyfile(broken, broken.with_name("intact.csv"))
    rewrite_csv(
        broken, lambda rows, columns: (rows, [c for c in columns if c != "BillingCurrency"])
    )
    report = validate_landing(landing)
    failure = only(report, "expect_column_to_exist", "BillingCurrency")
    assert failure.file == "billing/focus/2026-10/focus_export_323437494771.csv"
    assert "missing" in failure.examples[0]
    # The rules on the absent column are counted as failed but reported once, by the above.
    assert len(report.errors) == 1, report.summary()
    assert suite(report, "focus_exports").failed == 3
    assert suite(report, "focus_exports").passed == FOCUS_RULES + FOCUS_RULES - 3


def test_charge_period_ending_before_it_starts(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path)

    def swap(rows, columns):
        row = rows[2]
        row["ChargePeriodStart"], row["ChargePeriodEnd"] = (
            row["ChargePeriodEnd"],
            row["ChargePeriodStart"],
        )
        return rows, columns

    rewrite_csv(focus_file(landing), swap)
    report = validate_landing(landing)
    failure = only(report, "expect_column_pair_values_a_to_be_greater_than_b")
    assert failure.column == "ChargePeriodStart, ChargePeriodEnd"
    assert failure.file.endswith("focus_export_323437494771.csv")
    assert failure.unexpected_count == 1
    assert failure.examples[0].startswith("row 3: ChargePeriodEnd=2026-10-01 00:00:00")
    assert len(report.errors) == 1


def test_unparseable_timestamp_and_bad_category(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path)

    def spoil(rows, columns):
        rows[0]["ChargePeriodStart"] = "2026-02-30T00:00:00Z"
        rows[1]["ChargeCategory"] = "usage"
        rows[2]["BillingCurrency"] = "US$"
        rows[3]["Tags"] = "{not json"
        return rows, columns

    rewrite_csv(focus_file(landing), spoil)
    report = validate_landing(landing)
    assert only(report, "expect_column_values_to_be_null", "ChargePeriodStart").examples == [
        "row 1: ChargePeriodStart='2026-02-30T00:00:00Z'"
    ]
    assert only(report, "expect_column_values_to_be_in_set", "ChargeCategory").examples == [
        "row 2: ChargeCategory='usage'"
    ]
    assert only(report, "expect_column_values_to_match_regex", "BillingCurrency").examples == [
        "row 3: BillingCurrency='US$'"
    ]
    assert only(report, "expect_column_values_to_be_json_parseable", "Tags").examples == [
        "row 4: Tags='{not json'"
    ]
    assert len(report.errors) == 4, report.summary()


def test_empty_billing_folder_fails_and_missing_telemetry_is_skipped(tmp_path):
    (tmp_path / "landing" / "billing" / "focus").mkdir(parents=True)
    report = validate_landing(tmp_path / "landing")
    failure = only(report, "files_present")
    assert failure.file == "billing/"
    assert suite(report, "focus_exports").status == "FAILED"
    assert suite(report, "dcgm_samples").status == "skipped"
    assert suite(report, "reference_org_mapping").skipped == "no files in reference"


def test_gpu_util_out_of_range(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path, dcgm=True)
    path = dcgm_file(landing)
    response = json.loads(path.read_text())
    series = response["data"]["result"][0]
    series["values"][1][1] = "250"
    path.write_text(json.dumps(response))
    report = validate_landing(landing)
    failure = only(report, "expect_column_values_to_be_between", "value of DCGM_FI_DEV_GPU_UTIL")
    assert failure.file == path.relative_to(landing).as_posix()
    assert failure.unexpected_count == 1
    example = failure.examples[0]
    assert example.endswith(": value=250.0")
    assert series["metric"]["UUID"] in example
    assert f"({series['values'][1][0]})" in example  # the sample's unix time
    assert len(report.errors) == 1


def test_prometheus_error_response(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path, dcgm=True)
    path = dcgm_file(landing)
    path.write_text(
        json.dumps({"status": "error", "errorType": "timeout", "error": "query timed out"})
    )
    report = validate_landing(landing)
    failure = only(report, "expect_column_values_to_be_in_set", "status")
    assert failure.suite == "dcgm_responses"
    assert failure.file == path.relative_to(landing).as_posix()
    assert failure.examples == ["error: timeout: query timed out: status='error'"]
    assert suite(report, "dcgm_samples").rows == 0


def test_file_that_is_not_json(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path, dcgm=True)
    path = dcgm_file(landing)
    path.write_text(path.read_text()[:1000])  # truncated upload
    report = validate_landing(landing)
    failure = only(report, "expect_column_values_to_be_in_set", "status")
    assert failure.file == path.relative_to(landing).as_posix()
    assert "status='<not valid JSON>'" in failure.examples[0]


def test_duplicated_sample(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path, dcgm=True)
    path = dcgm_file(landing)
    response = json.loads(path.read_text())
    values = response["data"]["result"][3]["values"]
    values.insert(3, list(values[2]))  # the same [time, value] scraped twice
    path.write_text(json.dumps(response))
    report = validate_landing(landing)
    failure = only(report, "expect_compound_columns_to_be_unique", "series, timestamp")
    assert failure.file == path.relative_to(landing).as_posix()
    assert failure.unexpected_count == 2  # both copies
    assert len(failure.examples) == 1
    assert failure.examples[0].endswith(" (x2)")
    assert f"({values[2][0]})" in failure.examples[0]


def test_same_series_landed_twice_is_a_duplicate(generated_month, tmp_path):
    landing = small_landing(generated_month, tmp_path, dcgm=True)
    path = dcgm_file(landing)
    shutil.copyfile(path, path.with_name("resent.json"))
    report = validate_landing(landing)
    failures = [f for f in report.errors if f.rule == "expect_compound_columns_to_be_unique"]
    assert {failure.file for failure in failures} == {
        path.relative_to(landing).as_posix(),
        path.with_name("resent.json").relative_to(landing).as_posix(),
    }
    rows = json.loads(path.read_text())["data"]["result"]
    assert [failure.unexpected_count for failure in failures] == [
        sum(len(series["values"]) for series in rows)
    ] * 2


def test_kube_series_missing_labels_or_negative_requests(generated_month, tmp_path):
    source, _ = generated_month
    landing = small_landing(generated_month, tmp_path)
    day = sorted((source / "metrics" / "kube").glob("*/*"))[0]
    target = landing / day.relative_to(source)
    target.mkdir(parents=True)
    for name, change in {
        "kube_node_info.json": lambda metric, values: metric.pop("provider_id"),
        "kube_pod_labels.json": lambda metric, values: metric.pop("uid"),
        "kube_pod_container_resource_requests.json": lambda metric, values: values[0].__setitem__(
            1, "-1"
        ),
    }.items():
        response = json.loads((day / name).read_text())
        series = response["data"]["result"][0]
        change(series["metric"], series["values"])
        (target / name).write_text(json.dumps(response))
    report = validate_landing(landing)
    assert {
        (f.suite, f.file.rsplit("/", 1)[-1], f.column, f.unexpected_count) for f in report.errors
    } == {
        ("kube_samples", "kube_node_info.json", "provider_id", 144),
        (
            "kube_samples",
            "kube_pod_labels.json",
            "uid",
            len(series_values(day / "kube_pod_labels.json")),
        ),
        (
            "kube_samples",
            "kube_pod_container_resource_requests.json",
            "value of kube_pod_container_resource_requests",
            1,
        ),
    }, report.summary()


def series_values(path: Path) -> list:
    return json.loads(path.read_text())["data"]["result"][0]["values"]


# --- the command -------------------------------------------------------------------------------


def test_cli_exits_1_on_a_broken_landing_and_prints_the_failure(generated_month, tmp_path, capsys):
    from gpucost.commands.cli import main

    landing = small_landing(generated_month, tmp_path)

    def break_row(rows, columns):
        rows[0]["EffectiveCost"] = "NaN"
        return rows, columns

    rewrite_csv(focus_file(landing), break_row)
    docs = tmp_path / "docs"
    assert main(["validate", "--landing", str(landing), "--docs-dir", str(docs)]) == 1
    out = capsys.readouterr().out
    lines = generated_month[1]["bill_lines"]
    assert f"focus_exports           billing/focus       1         {lines}" in out
    assert (
        "billing/focus/2026-10/focus_export_323437494771.csv  column EffectiveCost  "
        "expect_column_values_to_match_regex (1 row)"
    ) in out
    assert "row 1: EffectiveCost='NaN'" in out
    assert "FAILED: 1 failure" in out
    assert (docs / "index.html").is_file()


def test_cli_exits_0_on_the_generated_month(generated_month, capsys):
    from gpucost.commands.cli import main

    assert main(["validate", "--landing", str(generated_month[0]), "--no-docs"]) == 0
    out = capsys.readouterr().out
    for name in SUITES:
        assert f"{name} " in out
    assert "PASSED; 0 warning(s)" in out


# --- the build's rules -------------------------------------------------------------------------

BILLING_SAMPLES = REAL_FOCUS.parent


def test_a_landing_zone_of_native_bills_only_passes(tmp_path):
    report = validate_landing(native_landing(tmp_path))
    assert report.success, report.summary()
    files = {result.suite: result.files for result in report.suites}
    assert (files["bills_aws_cur"], files["bills_azure"], files["bills_oci"]) == (1, 3, 1)
    assert files["bills_gcp"] == 1 and files["focus_exports"] == 0
    assert suite(report, "bills_aws_cur").rows == len(
        list(
            csv.DictReader((BILLING_SAMPLES / "aws_legacy_cur_sample_focus_converters.csv").open())
        )
    )


def test_required_bill_columns_are_the_build_var(tmp_path, monkeypatch):
    """validate reads gpucost_required_bill_columns from dbt_project.yml, per folder, matching
    names as the build binds them (any case; both AWS CUR spellings)."""
    import yaml

    project = yaml.safe_load((Path(__file__).parents[2] / "dbt_project.yml").read_text())
    required = project["vars"]["gpucost_required_bill_columns"]
    from gpucost.validation.expectations import focus

    assert set(required["focus"]) | {"BillingCurrency"} == set(focus.required_columns())

    other = tmp_path / "project"
    other.mkdir()
    vars_ = {
        "gpucost_required_bill_columns": {
            **required,
            "aws_cur": ["line_item_unblended_cost", "bill/PayerAccountId"],
            # `a|b`: either spelling, as the build's macro splits the entry
            "oci": ["no/OtherSpelling|cost/myCost", "no/SuchColumn|no/Either"],
        }
    }
    (other / "dbt_project.yml").write_text(yaml.safe_dump({"vars": vars_}), encoding="utf-8")
    monkeypatch.setenv("GPUCOST_PROJECT_DIR", str(other))
    report = validate_landing(native_landing(tmp_path))
    failure = only(report, "expect_column_values_to_be_null", "(header)")
    assert failure.file == "billing/oci/oci_cost_report_sample_focus_converters.csv"
    assert failure.examples == ["missing_columns='no/SuchColumn | no/Either'"]
    assert suite(report, "bills_aws_cur").failed == 0  # lineItem/UnblendedCost is that column


def test_lower_case_headers_date_only_periods_and_gzip_named_csv_pass(generated_month, tmp_path):
    """What the build reads, validate accepts: headers in any case, a date-only period (midnight
    UTC) and a gzip file whose name ends in .csv."""
    import gzip

    landing = small_landing(generated_month, tmp_path)
    bill = focus_file(landing)

    def relax(rows, columns):
        for row in rows:
            row["BillingPeriodStart"] = row["BillingPeriodStart"][:10]
        renamed = [{column.lower(): value for column, value in row.items()} for row in rows]
        return renamed, [column.lower() for column in columns]

    rewrite_csv(bill, relax)
    zipped = bill.with_name("zipped.csv")
    zipped.write_bytes(gzip.compress(bill.read_bytes()))
    report = validate_landing(landing)
    assert report.success, report.summary()
    assert suite(report, "focus_exports").files == 2


def test_the_validator_reads_like_the_build():
    """The rules written twice (SQL for the build, Python for validate) are the same text."""
    from gpucost.validation.expectations import focus
    from gpucost.validation.expectations._prometheus import MAX_JSON_OBJECT_BYTES

    macros = Path(__file__).parents[2] / "macros"
    types = (macros / "types_and_time.sql").read_text()
    parse = types[types.index("macro duckdb__parse_utc_timestamp") :]
    assert f"'{focus.OFFSET_PATTERN}'" in parse[: parse.index("endmacro")]
    landing_sql = (macros / "landing.sql").read_text()
    assert f"maximum_object_size = {MAX_JSON_OBJECT_BYTES}" in landing_sql


def test_a_query_range_file_over_16_mb_is_read(generated_month, tmp_path):
    """One query_range response of 17.9 MB (over DuckDB's 16 MB default object size) is read, as
    the build reads it."""
    landing = small_landing(generated_month, tmp_path, dcgm=True)
    path = dcgm_file(landing)
    response = json.loads(path.read_text())
    series = response["data"]["result"][0]
    start = int(series["values"][0][0])
    series["values"] = [[start + second, "42.125"] for second in range(745_000)]
    response["data"]["result"] = [series]
    path.write_text(json.dumps(response), encoding="utf-8")
    assert 17_000_000 < path.stat().st_size < 19_000_000
    report = validate_landing(landing)
    assert report.success, report.summary()
    assert suite(report, "dcgm_samples").rows == 745_000


def test_a_symlink_out_of_the_landing_zone_is_refused_without_its_content(
    generated_month, tmp_path
):
    landing = small_landing(generated_month, tmp_path)
    secret = tmp_path / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("BilledCost\nTOP-SECRET-CONTENT\n", encoding="utf-8")
    (landing / "billing" / "focus" / "linked.csv").symlink_to(secret)
    report = validate_landing(landing)
    failure = only(report, "file_in_landing_zone")
    assert failure.file == "billing/focus/linked.csv"
    assert not report.success
    assert "TOP-SECRET" not in report.summary()
    assert suite(report, "focus_exports").files == 1  # the bill itself is still checked
