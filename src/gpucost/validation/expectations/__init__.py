"""Great Expectations suites for the landing zone, as code: one module per raw source.

Each source module exposes ``SOURCE``, a :class:`Source` that names its files (globs under the
landing zone), builds its suites (``gx.ExpectationSuite`` objects, never edited by hand) and loads
its files into pandas frames with DuckDB, read the way the warehouse reads them
(``macros/landing.sql``). Every frame carries a ``source_file`` column (the file's path relative to
the landing zone) so a failed expectation names the file of each unexpected row.

Columns whose name contains ``__`` are derived by the loader (for example
``ChargePeriodStart__unparsed``, the raw text of a timestamp that staging cannot parse); an
expectation on such a column names the raw column it checks in ``meta["column"]``.

Importing this package imports great_expectations (several seconds): ``gpucost.validation.validate``
imports it only when a validation runs, so the ``gpucost`` command stays fast.
"""

from __future__ import annotations

from gpucost.validation.expectations.base import (
    GZIP_MAGIC,
    REQUIRED_BILL_COLUMNS_VAR,
    Batch,
    FileProblem,
    Loaded,
    Source,
    column_key,
    is_gzip,
    missing_columns,
    outside_landing,
    relative,
    required_bill_columns,
    sql_list,
    sql_string,
)

__all__ = [
    "GZIP_MAGIC",
    "REQUIRED_BILL_COLUMNS_VAR",
    "Batch",
    "FileProblem",
    "Loaded",
    "Source",
    "column_key",
    "is_gzip",
    "missing_columns",
    "outside_landing",
    "relative",
    "required_bill_columns",
    "sources",
    "sql_list",
    "sql_string",
]


def sources() -> list[Source]:
    """Every source, in the order they run (bills first: FOCUS, then each native format)."""
    from gpucost.validation.expectations import dcgm, focus, kube, native, reference

    return [focus.SOURCE, *native.sources(), dcgm.SOURCE, kube.SOURCE, reference.SOURCE]
