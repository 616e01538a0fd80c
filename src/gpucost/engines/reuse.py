"""Incremental allocation by bill line: an allocation Python model recomputes only the lines (or
groups of lines) whose inputs changed since its table was built, and keeps every other line's rows.

An allocation core computes each line's rows from that line's own rows of every input (the contract
of :class:`gpucost.engines.lazy_io.Lines`), so a line whose input rows are the same gives the same
rows. Each output row carries two columns:

* ``input_key``: the line (or group) it was computed for, the inputs' ``line_key`` value;
* ``input_fingerprint``: a digest of that line's rows in every input, of the model's options (idle
  policy, allocation basis), of the model's own read functions and of the allocation code (every
  module of :mod:`gpucost.core` and this package's engine helpers, and the libraries' versions).

An incremental build (:func:`reuse_lines`) then:

1. fingerprints every line of the current inputs, in DuckDB: per input, the line's row count and
   two sums of 64-bit row hashes (``hash(columns)`` and ``hash(columns, salt)``), so a changed,
   added, removed or duplicated row changes the line's digest (sums, not XOR: two equal rows do not
   cancel);
2. deletes from the model's table every row whose ``(input_key, input_fingerprint)`` is not a
   current line's (a changed line, or one no input holds any more: a restated bill, a removed file);
3. runs the core on the lines the table no longer holds (new and changed lines) only, and appends
   their rows.

The delete runs on the model's own cursor, a DuckDB connection of its own that commits by itself;
the append is dbt's. A build stopped between the two leaves the table without those lines' rows,
which the next build finds missing and computes: no state is kept anywhere else.

The libraries' versions are part of the digest, so upgrading DuckDB or Polars recomputes every
line; ``dbt build --full-refresh`` does too. A 64-bit hash sum pair collides with a probability of
about 2^-128 per changed line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

KEY = "input_key"
FINGERPRINT = "input_fingerprint"
COLUMNS = (KEY, FINGERPRINT)


@dataclass(frozen=True)
class Reuse:
    """What an allocation model hands :func:`gpucost.engines.lazy_io.allocate` to be incremental.

    ``previous``: the model's table as built before (``dbt.this``) on an incremental run; None on a
    first build or a full refresh (every line is computed). ``output_key``: the output column naming
    each row's line, when the inputs' ``line_key`` is a column of the output (``charge_id``).
    ``key_of``: otherwise, a relation ``(output_key, line_key)`` mapping each output line to its
    group (the idle spread's rows are charge lines, computed by cluster-day)."""

    previous: str | None
    output_key: str = "charge_id"
    key_of: Any = None


def previous_table(dbt: Any) -> str | None:
    """A model's own table for :class:`Reuse` (``dbt.this``) on an incremental run; None on a first
    build or a full refresh, when every line is computed."""
    return str(dbt.this) if dbt.is_incremental else None


def code_fingerprint() -> str:
    """A digest of the allocation code: every module of gpucost.core and gpucost.engines, and the
    versions of the libraries that run it (DuckDB, Polars, narwhals, pyarrow)."""
    import narwhals
    import polars
    import pyarrow

    package = Path(__file__).resolve().parent.parent
    sha = hashlib.sha256()
    for library in (duckdb, polars, narwhals, pyarrow):
        sha.update(f"{library.__name__} {library.__version__}\n".encode())
    for path in sorted([*package.glob("core/**/*.py"), *package.glob("engines/*.py")]):
        sha.update(path.relative_to(package).as_posix().encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()[:32]


def quote(name: str) -> str:
    """A SQL identifier, double-quoted (the engines' one definition; lazy_io uses it too)."""
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _name(model: str, what: str) -> str:
    """A temporary object's name for ``model`` (letters, digits and underscores only)."""
    return "_gpucost_reuse_" + re.sub(r"\W", "_", model) + "_" + what


def salt(model: str, options: Mapping[str, Any], schema: Any) -> str:
    """What every line's digest of ``model`` also depends on: its options, output schema, code."""
    text = repr((model, sorted((k, repr(v)) for k, v in options.items()), str(schema)))
    return hashlib.sha256((text + code_fingerprint()).encode()).hexdigest()[:32]


def fingerprint_sql(views: Sequence[tuple[str, Sequence[str]]], key: str, salt_text: str) -> str:
    """DuckDB SQL of every line's ``(input_key, input_fingerprint)`` over ``views`` (each a
    relation's name and its columns), all keyed by column ``key``. The first input names the lines:
    a key only the others hold has no line to allocate, and no digest (its rows would never be
    stored, so it would be computed again on every build)."""
    parts = []
    for i, (view, columns) in enumerate(views):
        cols = ", ".join(quote(c) for c in columns)
        parts.append(
            f"select {i} as frame, cast({quote(key)} as varchar) as {KEY}, count(*) as n,"
            f" sum(hash({cols})) as h1, sum(hash({cols}, {_literal(salt_text)})) as h2"
            f" from {view} group by all"
        )
    body = "\nunion all\n".join(parts)
    return (
        f"select {KEY}, md5({_literal(salt_text)} || string_agg(frame || ':' || n || ':' || h1"
        f" || ':' || h2, ',' order by frame)) as {FINGERPRINT}\nfrom (\n{body}\n) as lines"
        f" group by {KEY} having bool_or(frame = 0)"
    )


@dataclass(frozen=True)
class LinePlan:
    """The outcome of :func:`reuse_lines`: ``fingerprints`` names a temp table of every current
    line's digest; ``todo`` a temp table of the lines to compute (all of them when ``full``)."""

    fingerprints: str
    todo: str
    full: bool
    lines: int
    computed: int
    why: str = ""

    def report(self, model: str) -> None:
        """One line in the build's log: how many lines this build kept and computed."""
        why = f" ({self.why})" if self.why else ""
        print(
            f"{model}: {self.lines - self.computed:,} of {self.lines:,} lines kept,"
            f" {self.computed:,} computed{why}",
            flush=True,
        )


def reuse_lines(
    connection: duckdb.DuckDBPyConnection,
    model: str,
    natives: Sequence[Any],
    key: str,
    previous: str | None,
    salt_text: str,
) -> LinePlan:
    """Fingerprint the current lines of ``natives`` (DuckDB relations of ``connection``, keyed by
    ``key``), delete the stale rows of ``previous`` (the model's table, if any) and return which
    lines to compute."""
    views = []
    for i, native in enumerate(natives):
        view = _name(model, f"input_{i}")
        connection.register(view, native)
        views.append((view, list(native.columns)))
    prints = _name(model, "fingerprints")
    todo = _name(model, "todo")
    connection.execute(
        f"create or replace temp table {prints} as {fingerprint_sql(views, key, salt_text)}"
    )
    stored = (
        set(connection.sql(f"from {previous} limit 0").columns) if previous is not None else set()
    )
    full = not set(COLUMNS) <= stored
    if previous is not None and full:
        # a table from before its rows carried their lines' digests: rebuilt whole
        connection.execute(f"delete from {previous}")
    elif previous is not None:
        connection.execute(
            f"delete from {previous} as kept where not exists (select 1 from {prints} as now"
            f" where now.{KEY} = kept.{KEY} and now.{FINGERPRINT} = kept.{FINGERPRINT})"
        )
    if full:
        connection.execute(f"create or replace temp table {todo} as select * from {prints}")
    else:
        connection.execute(
            f"create or replace temp table {todo} as select * from {prints} as now"
            f" where not exists (select 1 from {previous} as kept where kept.{KEY} = now.{KEY})"
        )
    ((lines, computed),) = connection.sql(
        f"select (select count(*) from {prints}), (select count(*) from {todo})"
    ).fetchall()
    why = (
        "a full build"
        if previous is None
        else "the table's rows carried no digests yet"
        if full
        else ""
    )
    return LinePlan(prints, todo, full, lines, computed, why)


def keyed_output(
    out: Any,
    reuse: Reuse,
    prints: str,
    connection: duckdb.DuckDBPyConnection,
    order_by: Sequence[str] = (),
) -> Any:
    """``out`` (the core's rows as a DuckDB relation) with each row's ``input_key`` and
    ``input_fingerprint``, looked up in the temp table ``prints``, sorted by ``order_by``."""
    columns = ", ".join(f"out.{quote(c)}" for c in out.columns)
    source = _name("out", "rows")
    connection.register(source, out)
    if reuse.key_of is None:
        key = f"cast(out.{quote(reuse.output_key)} as varchar)"
        joins = ""
    else:
        mapping = _name("out", "key_of")
        connection.register(mapping, reuse.key_of)
        line = next(c for c in reuse.key_of.columns if c != reuse.output_key)
        key = f"cast(map.{quote(line)} as varchar)"
        joins = (
            f" left join (select distinct * from {mapping}) as map"
            f" on map.{quote(reuse.output_key)} = out.{quote(reuse.output_key)}"
        )
    order = ", ".join(f"out.{quote(c)} nulls first" for c in order_by)
    return connection.sql(
        f"select {columns}, {key} as {KEY}, fp.{FINGERPRINT} from {source} as out{joins}"
        f" left join {prints} as fp on fp.{KEY} = {key}" + (f" order by {order}" if order else "")
    )
