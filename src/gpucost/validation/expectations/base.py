"""What every source module of the landing-zone suites shares: batches, file problems, the
:class:`Source` record, SQL quoting, the required bill columns and small file checks."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import great_expectations as gx
    import pandas as pd


@dataclass
class Batch:
    """One frame to validate against one suite."""

    suite: str
    frame: pd.DataFrame
    files: list[str]
    """Landing-relative paths of the files whose rows are in the frame."""
    note: str = ""
    """Shown in the summary line (e.g. a sampling note)."""
    rows: int | None = None
    """Rows the files hold, when the frame holds fewer (a sample); else len(frame)."""
    index_columns: list[str] = field(default_factory=lambda: ["source_file"])
    """Columns that locate an unexpected row (GX ``unexpected_index_column_names``)."""


@dataclass
class FileProblem:
    """A file the loader could not read at all (no expectation can run on it)."""

    file: str
    message: str


@dataclass
class Loaded:
    batches: list[Batch] = field(default_factory=list)
    problems: list[FileProblem] = field(default_factory=list)


@dataclass(frozen=True)
class Source:
    """A raw source of the landing zone and how to validate it."""

    name: str
    title: str
    folder: str
    """Landing-relative folder, for messages."""
    patterns: tuple[str, ...]
    """Globs under the landing zone (pathlib syntax, ``**`` recursive)."""
    required: bool
    suites: Callable[[], Sequence[gx.ExpectationSuite]]
    load: Callable[[duckdb.DuckDBPyConnection, list[Path], Path, int | None], Loaded]
    """(connection, files, landing, sample_rows) -> frames; sample_rows caps heavy frames."""

    def files(self, landing: Path) -> list[Path]:
        found = {path for pattern in self.patterns for path in landing.glob(pattern)}
        return sorted(path for path in found if path.is_file())


def relative(path: Path | str, landing: Path) -> str:
    """A file's path relative to the landing zone, with forward slashes."""
    path = Path(path)
    try:
        return path.resolve().relative_to(landing.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def sql_string(value: str | Path) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def sql_list(values: Sequence[str | Path]) -> str:
    return "[" + ", ".join(sql_string(value) for value in values) + "]"


REQUIRED_BILL_COLUMNS_VAR = "gpucost_required_bill_columns"


def required_bill_columns() -> dict[str, list[str | list[str]]]:
    """The dbt var ``gpucost_required_bill_columns`` (dbt_project.yml): the columns a landed bill
    file must have, per folder under billing/, as the build reads them (one definition). An entry
    is a column name, `a|b` or a list of names of which one must be present. FOCUS also requires
    BillingCurrency unless ``gpucost_default_billing_currency`` declares it, as the build does."""
    from gpucost.commands.safe_output import default_project_dir, project_var

    project_dir = default_project_dir()
    required = dict(project_var(project_dir, REQUIRED_BILL_COLUMNS_VAR, None) or {})
    required = {str(key): list(value or []) for key, value in required.items()}
    focus = required.setdefault("focus", [])
    declared = project_var(project_dir, "gpucost_default_billing_currency", None)
    if not declared and not any(_names(entry) == ["BillingCurrency"] for entry in focus):
        focus.append("BillingCurrency")
    return required


def _names(entry: str | list[str]) -> list[str]:
    """An entry's alternative spellings: ``a|b`` (as the build's macro splits it) or a list."""
    if isinstance(entry, str):
        return [name.strip() for name in entry.split("|") if name.strip()]
    return [str(name) for name in entry]


def column_key(name: str) -> str:
    """How the build matches a column name: case-insensitively (DuckDB binds names that way), and
    for the two AWS CUR spellings alike (``lineItem/UnblendedCost`` = ``line_item_unblended_cost``):
    lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def missing_columns(found: Sequence[str], required: Sequence[str | list[str]]) -> list[str]:
    """The required entries (``a | b`` for alternatives) that ``found`` does not have."""
    keys = {column_key(name) for name in found}
    missing = []
    for entry in required:
        names = _names(entry)
        if not any(column_key(name) in keys for name in names):
            missing.append(" | ".join(names))
    return missing


GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: Path) -> bool:
    """True when the file's bytes are gzip, whatever its name (a gzip file named ``.csv``)."""
    try:
        with Path(path).open("rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError:
        return False


def outside_landing(path: Path, landing: Path) -> bool:
    """True for a symlink (or a file under a symlinked folder) whose target is outside the
    landing zone: the build refuses it, and nothing of its content may be shown."""
    try:
        Path(path).resolve().relative_to(Path(landing).resolve())
    except ValueError:
        return True
    return False
