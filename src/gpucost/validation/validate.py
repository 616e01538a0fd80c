"""``gpucost validate``: check the landing zone's raw files with Great Expectations.

    gpucost validate [--landing DIR] [--docs-dir DIR | --no-docs] [--sample-rows N]

Runs every suite of ``gpucost.validation.expectations`` (FOCUS exports, DCGM and kube-state-metrics
query_range JSON, the org mapping) against the files present, as a GX checkpoint per suite, on
frames DuckDB reads from the files the way the warehouse does. Writes GX Data Docs (static HTML)
and prints one line per suite, then each failure with its file, column, rule and example rows.
Exit code 1 when any expectation of severity ``critical`` fails, else 0; warnings are printed.

GX runs offline: an ephemeral context (``mode="ephemeral"`` never turns into a cloud context, even
with GX_CLOUD_* variables set) with in-memory stores, ``GX_ANALYTICS_ENABLED=false`` and
``analytics_enabled=False``, progress bars off. GX 1.24 has no usage-statistics client and its
PyPI version checker is never called; tests run the whole validation with sockets refused. The
Data Docs pages themselves, as GX's templates write them, load Bootstrap / jQuery / Font Awesome
from public CDNs when a browser opens them and show the GX logo from a remote URL stamped with
the time: the logo is rewritten to the site's local copy; without network the pages are unstyled
but readable (every result is in the HTML itself).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpucost.validation.expectations import Batch, Source

DEFAULT_DOCS_DIR = "warehouse/data_docs"
BILLING = "billing"
DOCS_SITE = "gpucost"
EXAMPLES = 5
"""Example rows or values shown per failure."""
ROW = "__row__"
"""The frames' (named) row index: GX reports unexpected rows by it."""
FILES_SHOWN = 10
"""Files listed per failed rule in the printed summary (the report keeps them all)."""

Progress = Callable[[str], None]


@dataclass
class Failure:
    """A failed expectation in one file (or a file that could not be read at all)."""

    suite: str
    file: str
    column: str | None
    rule: str
    """The expectation type (``expect_column_values_to_match_regex``), or the loader's rule."""
    description: str
    examples: list[str] = field(default_factory=list)
    unexpected_count: int | None = None
    """Unexpected rows in this file; None for table-level rules."""
    severity: str = "error"
    """``error`` (fails the run) or ``warning``."""

    def headline(self) -> str:
        column = f"  column {self.column}" if self.column else ""
        count = ""
        if self.unexpected_count is not None:
            count = f" ({self.unexpected_count:,} row{'s' if self.unexpected_count != 1 else ''})"
        level = "WARNING " if self.severity == "warning" else ""
        return f"{level}{self.file}{column}  {self.rule}{count}: {self.description}"


@dataclass
class SuiteResult:
    """One suite run on one source (all its batches)."""

    suite: str
    source: str
    files: int
    rows: int
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    seconds: float = 0.0
    """Time GX took to validate the suite's frames."""
    read_seconds: float | None = None
    """Time DuckDB took to read the source's files (on the source's first suite)."""
    skipped: str = ""
    """Why the suite did not run (no files of an optional source)."""
    note: str = ""

    @property
    def status(self) -> str:
        if self.skipped:
            return "skipped"
        if self.failed:
            return "FAILED"
        return "passed" if not self.warnings else "passed (warnings)"


@dataclass
class ValidationReport:
    landing: Path
    suites: list[SuiteResult] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    """Failed expectations, errors and warnings, one per rule and file."""
    docs_index: Path | None = None
    seconds: float = 0.0

    @property
    def errors(self) -> list[Failure]:
        return [failure for failure in self.failures if failure.severity == "error"]

    @property
    def warnings(self) -> list[Failure]:
        return [failure for failure in self.failures if failure.severity != "error"]

    @property
    def success(self) -> bool:
        return not self.errors and not any(suite.failed for suite in self.suites)

    def summary(self) -> str:
        """The readable summary ``gpucost validate`` prints."""
        lines = [f"Landing zone {self.landing}", ""]
        header = (
            f"{'suite':<23} {'source':<14} {'files':>6} {'rows':>11} "
            f"{'passed':>7} {'failed':>7} {'warn':>5} {'read':>6} {'check':>6}  status"
        )
        lines.append(header)
        for suite in self.suites:
            line = (
                f"{suite.suite:<23} {suite.source:<14} {suite.files:>6,} {suite.rows:>11,} "
                f"{suite.passed:>7} {suite.failed:>7} {suite.warnings:>5} "
                + (f"{suite.read_seconds:>5.1f}s" if suite.read_seconds is not None else " " * 6)
                + f" {suite.seconds:>5.1f}s  {suite.status}"
            )
            extra = suite.skipped or suite.note
            lines.append(line + (f" ({extra})" if extra else ""))
        for title, failures in (("Failures", self.errors), ("Warnings", self.warnings)):
            if not failures:
                continue
            lines += ["", f"{title}:"]
            shown: dict[tuple[str, str | None, str], int] = {}
            for failure in failures:
                key = (failure.suite, failure.column, failure.rule)
                shown[key] = shown.get(key, 0) + 1
                if shown[key] == FILES_SHOWN + 1:
                    more = sum(
                        1 for other in failures if (other.suite, other.column, other.rule) == key
                    )
                    lines.append(
                        f"  ... {failure.rule} on {failure.column} fails in "
                        f"{more - FILES_SHOWN} more files"
                    )
                if shown[key] > FILES_SHOWN:
                    continue
                lines.append(f"  {failure.headline()}")
                lines += [f"      {example}" for example in failure.examples]
        lines.append("")
        if self.docs_index:
            lines.append(f"Data Docs: {self.docs_index}")
        errors = len(self.errors)
        verdict = (
            "PASSED"
            if self.success
            else f"FAILED: {errors} failure{'s' if errors != 1 else ''} "
            f"(rule x file) in {sum(1 for suite in self.suites if suite.failed)} suite(s)"
        )
        lines.append(f"{verdict}; {len(self.warnings)} warning(s); {self.seconds:.1f}s")
        return "\n".join(lines)


def validate_landing(
    landing: Path,
    docs_dir: Path | None = None,
    *,
    sample_rows: int | None = None,
    progress: Progress | None = None,
) -> ValidationReport:
    """Run every suite against every source present in ``landing``; write Data Docs to
    ``docs_dir`` when given.

    A source without files is skipped, except the FOCUS exports (required): an empty
    ``billing/focus`` is a failure. ``sample_rows`` caps the rows of the Prometheus sample frames
    (whole series are kept, so duplicate checks stay exact within them); None checks every row.
    """
    started = time.monotonic()
    say = progress or (lambda message: None)
    landing = Path(landing)
    context = _offline_context(docs_dir)

    import duckdb

    from gpucost.validation.expectations import sources

    report = ValidationReport(landing=landing)
    with duckdb.connect() as con:
        con.execute("set TimeZone = 'UTC'")
        for source in sources():
            _run_source(context, con, source, landing, sample_rows, report, say)
    bills = [result for result in report.suites if result.source.startswith(BILLING + "/")]
    if not any(result.files for result in bills) and not any(
        failure.file.startswith(BILLING + "/") for failure in report.failures
    ):
        folders = ", ".join(sorted({result.source.split("/", 1)[1] for result in bills}))
        report.failures.append(
            Failure(
                bills[0].suite if bills else "bills",
                BILLING + "/",
                None,
                "files_present",
                f"no bill in {BILLING}/ (one of {folders}): the bill is required",
            )
        )
        if bills:
            bills[0].failed += 1
            bills[0].skipped = ""
    order = {result.suite: number for number, result in enumerate(report.suites)}
    report.failures.sort(
        key=lambda failure: (
            order.get(failure.suite, len(order)),
            failure.file,
            failure.column or "",
            failure.rule,
        )
    )
    if docs_dir is not None:
        say("Writing Data Docs ...")
        report.docs_index = _build_docs(context, Path(docs_dir))
    report.seconds = time.monotonic() - started
    return report


def _offline_context(docs_dir: Path | None) -> Any:
    """An ephemeral GX context: in-memory stores, no analytics, no cloud, no progress bars."""
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    sites = {}
    if docs_dir is not None:
        sites[DOCS_SITE] = {
            "class_name": "SiteBuilder",
            "show_how_to_buttons": False,
            "store_backend": {
                "class_name": "TupleFilesystemStoreBackend",
                "base_directory": str(Path(docs_dir).resolve()),
            },
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        }
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites=sites,
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    context = gx.get_context(mode="ephemeral", project_config=config)
    context.data_sources.add_pandas("landing")
    return context


def _run_source(
    context: Any,
    con: Any,
    source: Source,
    landing: Path,
    sample_rows: int | None,
    report: ValidationReport,
    say: Progress,
) -> None:
    from gpucost.validation.expectations import outside_landing

    found = source.files(landing)
    files = [path for path in found if not outside_landing(path, landing)]
    suites = list(source.suites())
    for path in found:
        if path not in files:
            shown = path.relative_to(landing).as_posix() if path.is_relative_to(landing) else path
            report.failures.append(
                Failure(
                    suites[0].name,
                    str(shown),
                    None,
                    "file_in_landing_zone",
                    "is a symlink to a file outside the landing zone: refused (its content is not "
                    "read); copy the file into the landing zone",
                )
            )
    if not files:
        for suite in suites:
            result = SuiteResult(suite.name, source.folder, 0, 0)
            if source.required:
                result.failed = 1
                report.failures.append(
                    Failure(
                        suite.name,
                        source.folder + "/",
                        None,
                        "files_present",
                        f"no {source.title} in {source.folder} ("
                        + ", ".join(pattern.rsplit("/", 1)[-1] for pattern in source.patterns)
                        + "): the bill is required",
                    )
                )
            else:
                result.skipped = f"no files in {source.folder}"
            report.suites.append(result)
        say(f"{source.title}: no files in {source.folder}" + (" (required)" * source.required))
        return

    started = time.monotonic()
    say(f"{source.title}: reading {len(files)} file(s) from {source.folder} ...")
    loaded = source.load(con, files, landing, sample_rows)
    load_seconds = time.monotonic() - started
    rows = sum(len(batch.frame) for batch in loaded.batches)
    say(f"  read {rows:,} rows in {load_seconds:.1f}s")

    by_suite: dict[str, list[Batch]] = {}
    for batch in loaded.batches:
        by_suite.setdefault(batch.suite, []).append(batch)
    for suite in suites:
        batches = by_suite.get(suite.name, [])
        suite_files = {name for batch in batches for name in batch.files}
        result = SuiteResult(
            suite.name,
            source.folder,
            len(suite_files),
            sum(batch.rows if batch.rows is not None else len(batch.frame) for batch in batches),
            note="; ".join(sorted({batch.note for batch in batches if batch.note})),
        )
        suite_started = time.monotonic()
        if batches:
            checkpoint = _checkpoint(context, suite)
            for number, batch in enumerate(batches, start=1):
                say(f"  {suite.name}: validating {len(batch.frame):,} rows ...")
                _validate_batch(context, checkpoint, suite.name, number, batch, result, report)
        result.seconds = time.monotonic() - suite_started
        if suite is suites[0]:
            result.read_seconds = load_seconds
        report.suites.append(result)
        say(f"  {suite.name}: {result.status} in {result.seconds:.1f}s")
    for problem in loaded.problems:
        report.failures.append(
            Failure(suites[0].name, problem.file, None, "file_readable", problem.message)
        )
        next(s for s in report.suites if s.suite == suites[0].name).failed += 1


def _checkpoint(context: Any, suite: Any) -> Any:
    """A checkpoint over the suite's dataframe asset, reporting unexpected rows by position."""
    import great_expectations as gx

    datasource = context.data_sources.get("landing")
    asset = datasource.add_dataframe_asset(name=suite.name)
    batch_definition = asset.add_batch_definition_whole_dataframe("landing_files")
    suite = context.suites.add(suite)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=suite.name, data=batch_definition, suite=suite)
    )
    return context.checkpoints.add(
        gx.Checkpoint(
            name=f"validate_{suite.name}",
            validation_definitions=[definition],
            # SUMMARY keeps the stored results (and Data Docs) small; the frame's named row index
            # with exclude_unexpected_values makes GX return every unexpected row's position as
            # one list, cheaply (naming columns instead costs a pandas lookup per row and column:
            # minutes for a month of duplicated samples). The runner reads the rows back itself.
            result_format={
                "result_format": "SUMMARY",
                "unexpected_index_column_names": [ROW],
                "exclude_unexpected_values": True,
                "partial_unexpected_count": EXAMPLES,
                "return_unexpected_index_query": False,
            },
        )
    )


def _validate_batch(
    context: Any,
    checkpoint: Any,
    suite_name: str,
    number: int,
    batch: Batch,
    result: SuiteResult,
    report: ValidationReport,
) -> None:
    import pandas as pd
    from great_expectations.core.run_identifier import RunIdentifier

    batch.frame.index = pd.RangeIndex(len(batch.frame), name=ROW)
    run_id = RunIdentifier(run_name=f"{suite_name}-{number}", run_time=datetime.now(UTC))
    outcome = checkpoint.run(batch_parameters={"dataframe": batch.frame}, run_id=run_id)
    for key, suite_result in outcome.run_results.items():
        missing = {
            item.expectation_config.kwargs.get("column")
            for item in suite_result.results
            if item.expectation_config.type == "expect_column_to_exist" and not item.success
        }
        for item in suite_result.results:
            warning = _is_warning(item.expectation_config)
            if item.success:
                result.passed += 1
                continue
            if warning:
                result.warnings += 1
            else:
                result.failed += 1
            column = item.expectation_config.kwargs.get("column")
            if column in missing and item.expectation_config.type != "expect_column_to_exist":
                continue  # reported once, by expect_column_to_exist
            report.failures.extend(_failures(suite_name, batch, item, warning))
            _restore_sample_values(batch, item)
        # Store the results again, with their sample values, for the Data Docs.
        context.validation_results_store.set(key, suite_result)


def _restore_sample_values(batch: Batch, item: Any) -> None:
    """Put back the first unexpected values (and the commonest) that ``exclude_unexpected_values``
    left out, so the Data Docs show them next to the expectation, as GX normally does."""
    column = item.expectation_config.kwargs.get("column")
    rows = _unexpected_rows(item.result or {})
    if not rows or column not in batch.frame.columns:
        return
    values = batch.frame.loc[rows, column]
    item.result["partial_unexpected_list"] = [_plain(value) for value in values.head(EXAMPLES)]
    counts = values.astype("string").value_counts(dropna=False).head(EXAMPLES)
    item.result["partial_unexpected_counts"] = [
        {"value": _plain(value), "count": int(count)} for value, count in counts.items()
    ]


def _plain(value: Any) -> Any:
    """A JSON-friendly scalar (None for missing; str for text, timestamps and the like)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "item"):
        return _plain(value.item())
    return None if str(value) in ("<NA>", "NaT", "nan") else str(value)


def _is_warning(config: Any) -> bool:
    return str(getattr(config.severity, "value", config.severity)) != "critical"


def _failures(suite_name: str, batch: Batch, item: Any, warning: bool) -> list[Failure]:
    """One Failure per file with unexpected rows (or one for the batch's files)."""
    config = item.expectation_config
    kwargs = config.kwargs
    meta = config.meta or {}
    checked = [kwargs[key] for key in ("column", "column_A", "column_B") if kwargs.get(key)]
    checked += list(kwargs.get("column_list") or [])
    column = meta.get("column") or ", ".join(checked) or None
    description = re.sub(r"\*\*|`", "", config.description or config.type)
    severity = "warning" if warning else "error"
    files = _files_label(batch.files)

    exception = _exception_message(item.exception_info)
    if exception:
        return [
            Failure(
                suite_name,
                files,
                column,
                config.type,
                description,
                [f"not evaluated: {exception}"],
                severity=severity,
            )
        ]
    outcome = item.result or {}
    rows = _unexpected_rows(outcome)
    if not rows:
        observed = outcome.get("observed_value")
        examples = [] if observed is None else [f"observed: {observed!r}"]
        if config.type == "expect_column_to_exist":
            examples = [f"the column is missing from {files}"]
        return [
            Failure(suite_name, files, column, config.type, description, examples, None, severity)
        ]
    frame = batch.frame
    shown = [c for c in dict.fromkeys([*batch.index_columns, *checked]) if c in frame.columns]
    located = frame.loc[rows, shown]
    if "source_file" not in located.columns:
        located = located.assign(source_file=files)
    total = outcome.get("unexpected_count") or len(rows)
    failures = []
    for file, group in located.groupby("source_file", observed=True, sort=False):
        examples = _examples(group.head(EXAMPLES * 20).to_dict("records"), checked)
        if len(rows) < total:
            examples.append(f"(GX located {len(rows):,} of {total:,} unexpected rows)")
        failures.append(
            Failure(
                suite_name,
                str(file),
                column,
                config.type,
                description,
                examples,
                len(group),
                severity,
            )
        )
    return failures


def _unexpected_rows(outcome: dict) -> list[int]:
    """Positions of the unexpected rows: GX returns them as one list under the frame's named
    index (``exclude_unexpected_values``), in full even in SUMMARY format."""
    for key in ("unexpected_index_list", "partial_unexpected_index_list"):
        for entry in outcome.get(key) or []:
            if isinstance(entry, dict) and isinstance(entry.get(ROW), list):
                return [int(row) for row in entry[ROW]]
    return []


def _examples(entries: list[dict], checked: list[str]) -> list[str]:
    """Up to EXAMPLES distinct examples, in file order; repeats counted (a duplicate's copies)."""
    counts: dict[str, int] = {}
    for entry in entries:
        text = _example(entry, checked)
        if text in counts or len(counts) < EXAMPLES:
            counts[text] = counts.get(text, 0) + 1
    return [text + (f" (x{count})" if count > 1 else "") for text, count in counts.items()]


def _files_label(files: list[str]) -> str:
    if len(files) <= 3:
        return ", ".join(files) or "(no files)"
    return f"{', '.join(files[:3])} and {len(files) - 3} more files"


def _exception_message(info: Any) -> str | None:
    if not info:
        return None
    if isinstance(info, dict) and "raised_exception" in info:
        infos = [info]
    elif isinstance(info, dict):
        infos = list(info.values())
    else:
        infos = [vars(info)] if hasattr(info, "__dict__") else []
    for entry in infos:
        if isinstance(entry, dict) and entry.get("raised_exception", True):
            message = entry.get("exception_message")
            if message:
                return str(message).splitlines()[0][:300]
    return None


def _example(entry: dict, checked: list[str]) -> str:
    """``row 12: BilledCost='abc'`` or ``value=250.0 at 2026-10-01T00:10:00Z [node, gpu, pod]``."""
    located = []
    if entry.get("source_row_number") not in (None, ""):
        located.append(f"row {entry['source_row_number']}")
    values = []
    for column in checked:
        if column in entry and column not in ("sampled_epoch", "series"):
            shown = "value" if column == "value_number" else column.split("__")[0]
            values.append(f"{shown}={_show(entry[column])}")
    if entry.get("sampled_epoch") not in (None, ""):
        located.append(f"at {_show_time(entry['sampled_epoch'])}")
    labels = [
        f"{shown}={entry[key]}"
        for key, shown in LOCATING_LABELS
        if entry.get(key) not in (None, "", "nan")
    ]
    if labels:
        located.append("{" + ", ".join(labels) + "}")
    if entry.get("error") not in (None, "", "nan"):
        located.append(f"error: {entry['error']}")
    text = ", ".join(values)
    where = " ".join(located)
    return f"{where}: {text}" if text and where else (text or where)


LOCATING_LABELS = (
    ("metric_name", "metric"),
    ("Hostname_or_hostname", "node"),
    ("node", "node"),
    ("UUID", "UUID"),
    ("namespace", "namespace"),
    ("pod", "pod"),
)


def _show(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _show_time(epoch: Any) -> str:
    try:
        seconds = float(epoch)
        shown = f"{seconds:.0f}" if seconds.is_integer() else f"{seconds}"
        when = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{when} ({shown})"
    except (TypeError, ValueError, OverflowError, OSError):
        return str(epoch)


def _build_docs(context: Any, docs_dir: Path) -> Path:
    """Rebuild the Data Docs site in ``docs_dir`` (GX's own pages only are replaced)."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    for name in ("expectations", "validations", "static"):
        shutil.rmtree(docs_dir / name, ignore_errors=True)
    (docs_dir / "index.html").unlink(missing_ok=True)
    context.build_data_docs(site_names=[DOCS_SITE])
    _localise_logo(docs_dir)
    return docs_dir / "index.html"


_REMOTE_LOGO = re.compile(
    r"https://great-expectations-web-assets\.s3\.us-east-2\.amazonaws\.com/"
    r"(?:logo-long\.png|full_logo_dark\.png)[^\"')]*"
)


def _localise_logo(docs_dir: Path) -> None:
    """Point the pages' GX logo (a remote image with a timestamp in its URL) at the local copy."""
    logo = docs_dir / "static" / "images" / "logo-long.png"
    for page in [*docs_dir.rglob("*.html"), *docs_dir.rglob("*.css")]:
        text = page.read_text(encoding="utf-8")
        if not _REMOTE_LOGO.search(text):
            continue
        local = Path(os.path.relpath(logo, page.parent)).as_posix()
        page.write_text(_REMOTE_LOGO.sub(local, text), encoding="utf-8")


def cmd_validate(args: argparse.Namespace) -> int:
    from gpucost.commands.project import find_project_dir, landing_dir

    project_dir = find_project_dir()
    landing = landing_dir(project_dir, args.landing)
    if not landing.is_dir():
        print(
            f"gpucost: landing zone {landing} does not exist; pass --landing or set "
            "GPUCOST_LANDING_DIR",
            file=sys.stderr,
        )
        return 2
    docs_dir = None
    if not args.no_docs:
        docs_dir = Path(args.docs_dir or DEFAULT_DOCS_DIR)
        docs_dir = docs_dir if docs_dir.is_absolute() else project_dir / docs_dir
    print(f"Validating {landing} with Great Expectations", flush=True)
    report = validate_landing(
        landing,
        docs_dir,
        sample_rows=args.sample_rows,
        progress=lambda message: print(f"  {message}", flush=True),
    )
    print()
    print(report.summary(), flush=True)
    return 0 if report.success else 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "validate",
        help="check the landing zone's raw files with Great Expectations",
        description="Check the landing zone's raw files with Great Expectations.",
    )
    parser.add_argument("--landing", help="landing zone (default $GPUCOST_LANDING_DIR or landing)")
    parser.add_argument(
        "--docs-dir", help=f"where to write the Data Docs HTML (default {DEFAULT_DOCS_DIR})"
    )
    parser.add_argument("--no-docs", action="store_true", help="do not write Data Docs")
    parser.add_argument(
        "--sample-rows",
        type=int,
        default=None,
        metavar="N",
        help="check about N Prometheus samples per source, whole series at a time "
        "(default: every sample)",
    )
    parser.set_defaults(func=cmd_validate)
