"""gpucost.engines.reuse: an allocation model built incrementally recomputes only the bill lines whose
inputs changed, and its table then equals the model computed from scratch, row for row.

The model here is int_volume_costs_prorated's body (two inputs read by line), run as dbt-duckdb runs
an incremental Python model: the first build creates the table from the result, every later build
appends its result to the table (after the model has deleted its stale rows itself)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import duckdb
import jinja2
import pytest

from gpucost.core.storage import allocate_volume_lines
from gpucost.engines.arrow_io import VOLUME_CLAIM_SCHEMA, table_of
from gpucost.engines.lazy_io import Lines, _code, allocate
from gpucost.engines.reuse import COLUMNS, Reuse, fingerprint_sql, salt
from tests.python.test_core_allocation import random_volume_fleet
from tests.python.test_engine_io import LINE_SCHEMA, MOUNT_SCHEMA, _dbt_session

TABLE = "volume_costs"


class Model:
    """An in-memory warehouse with the model's two inputs as tables, and the lines the core saw."""

    def __init__(self, lines: list[dict], mounts: list[dict]):
        self.con = duckdb.connect()
        self.seen: list[set[str]] = []
        self.land(lines, mounts)

    def land(self, lines: list[dict], mounts: list[dict]) -> None:
        for name, rows, schema in (("lines", lines, LINE_SCHEMA), ("mounts", mounts, MOUNT_SCHEMA)):
            self.con.register("rows", table_of(rows, schema))
            self.con.execute(f"create or replace table {name} as from rows")
            self.con.unregister("rows")

    def _core(self, lines, mounts):
        self.seen.append(set(lines.select("charge_id").collect().to_native()["charge_id"]))
        return allocate_volume_lines(lines, mounts)

    def result(self, previous: str | None, rows_per_part=None):
        return allocate(
            "int_volume_costs_prorated",
            self._core,
            VOLUME_CLAIM_SCHEMA,
            ("charge_id", "workload_id"),
            Lines(self.con.table("lines"), ("billed_cost", "effective_cost")),
            Lines(self.con.table("mounts")),
            session=_dbt_session(self.con),
            rows_per_part=rows_per_part,
            reuse=Reuse(previous),
        )

    def build(self, rows_per_part=None) -> set[str]:
        """One dbt build of the model; returns the lines its core computed."""
        self.seen.clear()
        exists = self.con.sql(
            f"select count(*) from duckdb_tables() where table_name = '{TABLE}'"
        ).fetchall()[0][0]
        out = self.result(TABLE if exists else None, rows_per_part)
        self.con.register("out", out)
        if exists:
            for column in COLUMNS:  # dbt's on_schema_change: append_new_columns
                self.con.execute(f"alter table {TABLE} add column if not exists {column} varchar")
            self.con.execute(f"insert into {TABLE} by name select * from out")
        else:
            self.con.execute(f"create table {TABLE} as select * from out")
        self.con.unregister("out")
        return set().union(*self.seen)

    def rows(self, relation: str = TABLE) -> list[tuple]:
        return sorted(self.con.sql(f"select * from {relation}").fetchall(), key=repr)

    def from_scratch(self) -> list[tuple]:
        self.con.register("scratch", self.result(None))
        try:
            return self.rows("scratch")
        finally:
            self.con.unregister("scratch")


def _changed_month(lines: list[dict], mounts: list[dict]) -> tuple[list[dict], list[dict]]:
    """The same month with one line restated, one removed, one added, one line's mount moved to
    another workload, and one mount row landed twice."""
    lines = [dict(r) for r in lines if r["charge_id"] != "v05"]
    for row in lines:
        if row["charge_id"] == "v03":
            row["billed_cost"] += Decimal("0.000000000000000001")
    lines.append({**lines[0], "charge_id": "v99"})
    mounts = [dict(r) for r in mounts if r["charge_id"] != "v05"]
    moved = next(r for r in mounts if r["charge_id"] == "v07")
    moved["workload_id"] = "someone-else"
    mounts.append(dict(next(r for r in mounts if r["charge_id"] == "v09")))
    mounts.append({**mounts[0], "charge_id": "v99"})
    # a mount of a line the bill does not hold: no line to allocate, no digest
    mounts.append({**mounts[0], "charge_id": "no-such-line"})
    return lines, mounts


@pytest.fixture()
def month() -> tuple[list[dict], list[dict]]:
    lines, mounts = random_volume_fleet(5, 20)
    # every line the change touches holds mounts (the fleet draws some lines without any)
    for charge in ("v07", "v09"):
        mounts.append({"charge_id": charge, "workload_id": "p1", "mounted_ms": 1000})
    return lines, mounts


@pytest.mark.parametrize("rows_per_part", [None, 3])
def test_only_changed_lines_are_recomputed_and_the_table_equals_a_fresh_one(
    month, rows_per_part, capsys
):
    model = Model(*month)
    first = model.build(rows_per_part)
    assert first == {r["charge_id"] for r in month[0]}
    assert model.rows() == model.from_scratch()

    model.land(*_changed_month(*month))
    assert model.build(rows_per_part) == {"v03", "v07", "v09", "v99"}
    assert model.rows() == model.from_scratch()
    assert not model.con.sql(f"select * from {TABLE} where charge_id = 'v05'").fetchall()

    # nothing changed: nothing computed, the same rows
    before = model.rows()
    capsys.readouterr()
    assert model.build(rows_per_part) == set()
    assert model.rows() == before
    lines = len(month[0])  # 20 - v05 + v99
    assert capsys.readouterr().out == (
        f"int_volume_costs_prorated: {lines:,} of {lines:,} lines kept, 0 computed\n"
    )


def test_a_build_stopped_after_the_delete_is_completed_by_the_next(month):
    model = Model(*month)
    model.build()
    model.land(*_changed_month(*month))
    model.result(TABLE)  # deletes the stale lines' rows; dbt never appends the result
    assert not model.con.sql(f"select * from {TABLE} where charge_id = 'v03'").fetchall()
    assert model.build() == {"v03", "v07", "v09", "v99"}
    assert model.rows() == model.from_scratch()


def test_a_table_without_the_digests_is_rebuilt_whole(month):
    model = Model(*month)
    model.build()
    # a table built before its rows carried their lines' digests
    columns = ", ".join(COLUMNS)
    model.con.execute(
        f"create or replace table {TABLE} as select * exclude ({columns}) from {TABLE}"
    )
    assert model.build() == {r["charge_id"] for r in month[0]}
    assert model.rows() == model.from_scratch()


def test_every_setting_and_the_code_change_each_lines_digest():
    schema = VOLUME_CLAIM_SCHEMA
    base = salt("m", {"policy": "even"}, schema)
    assert base == salt("m", {"policy": "even"}, schema)
    assert base != salt("m", {"policy": "proportional"}, schema)
    assert base != salt("other", {"policy": "even"}, schema)
    assert base != salt("m", {"policy": "even"}, schema.remove(0))


def _render_line_digests(inputs: list, key: str, salt_text: str) -> str:
    """macros/line_digests.sql's line_digests rendered by Jinja2 (dbt's ``adapter.quote`` given)."""
    text = (Path(__file__).resolve().parents[2] / "macros" / "line_digests.sql").read_text()
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    module = env.from_string(text).make_module(
        {"adapter": SimpleNamespace(quote=lambda name: '"' + name.replace('"', '""') + '"')}
    )
    return str(module.line_digests(inputs, key, salt_text))


def test_the_sql_models_digests_are_the_python_models_rule(month):
    """fct_allocation_metric_splits (SQL, macro line_digests) and the allocation Python models
    (fingerprint_sql) digest a line by one rule: the same inputs and salt, the same digests; a
    changed row changes its line's digest in both."""
    model = Model(*month)
    inputs = [
        ["lines", ["charge_id", "billed_cost", "claim_ids"]],
        ["mounts", ["charge_id", "workload_id"]],
    ]
    salt_text = "it's salt"

    def digests(sql: str) -> dict:
        return dict(model.con.sql(sql).fetchall())

    python = digests(fingerprint_sql([tuple(i) for i in inputs], "charge_id", salt_text))
    sql = digests(_render_line_digests(inputs, "charge_id", salt_text))
    assert python == sql and len(sql) == len({r["charge_id"] for r in month[0]})
    model.land(*_changed_month(*month))
    changed = digests(_render_line_digests(inputs, "charge_id", salt_text))
    assert {k for k in changed if changed[k] != sql.get(k)} == {"v03", "v07", "v09", "v99"}
    assert "v05" in sql and "v05" not in changed
    assert changed == digests(fingerprint_sql([tuple(i) for i in inputs], "charge_id", salt_text))


def test_a_readers_code_is_part_of_the_digest_and_the_same_in_every_process():
    """A model's own read function decides what the core sees of a line: its code is in the salt,
    spelled the same whichever process compiled it (a nested function's code object is not shown
    by its address), and a changed reader gives another salt."""
    source = "def read(native):\n    return sorted(native, key=lambda row: row[{}])\n"
    readers = []
    for index in (0, 0, 1):
        namespace: dict = {}
        exec(source.format(index), namespace)  # two compilations of one reader
        readers.append(namespace["read"])
    first, again, other = (_code(r) for r in readers)
    assert first == again and first != other and "0x" not in first
    assert _code(None) is None
