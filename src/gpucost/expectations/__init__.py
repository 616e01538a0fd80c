"""Great Expectations suites for the landing zone, as code: one module per raw source.

Each source module exposes ``SOURCE``, a :class:`Source` that names its files (globs under the
landing zone), builds its suites (``gx.ExpectationSuite`` objects, never edited by hand) and loads
its files into pandas frames with DuckDB, read the way the warehouse reads them
(``macros/landing.sql``). Every frame carries a ``source_file`` column (the file's path relative to
the landing zone) so a failed expectation names the file of each unexpected row.

Columns whose name contains ``__`` are derived by the loader (for example
``ChargePeriodStart__unparsed``, the raw text of a timestamp that staging cannot parse); an
expectation on such a column names the raw column it checks in ``meta["column"]``.

Importing this package imports great_expectations (several seconds): ``gpucost.validation``
imports it only when a validation runs, so the ``gpucost`` command stays fast.
"""

from __future__ import annotations

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


def sources() -> list[Source]:
    """Every source, in the order they run (bill first)."""
    from gpucost.expectations import dcgm, focus, kube, reference

    return [focus.SOURCE, dcgm.SOURCE, kube.SOURCE, reference.SOURCE]
