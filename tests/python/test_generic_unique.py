"""The generic test gpucost_unique_combination_of_columns: its two steps (a hash per row, then the columns
where a hash repeats) return exactly the combinations that occur more than once, nulls counting as one
value, even when every row's hash collides."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import jinja2
import pytest

TEST_SQL = (
    Path(__file__).resolve().parents[2]
    / "tests"
    / "generic"
    / ("gpucost_unique_combination_of_columns.sql")
)


def _render(model: str, columns: list[str], hash_function: str = "hash") -> str:
    """The test's query for ``model``: the body of its ``{% test %}`` block rendered by Jinja2 (the
    block tag is dbt's; the body is plain Jinja), ``hash`` renamed when asked."""
    text = TEST_SQL.read_text(encoding="utf-8")
    body = re.search(r"{%\s*test [^%]*%}(.*){%\s*endtest\s*%}", text, re.S)
    assert body is not None
    sql = jinja2.Template(body.group(1)).render(model=model, combination_of_columns=columns)
    return re.sub(r"\bhash\(", f"{hash_function}(", sql)


def _reference(con: duckdb.DuckDBPyConnection, model: str, columns: list[str]) -> list[tuple]:
    cols = ", ".join(columns)
    return sorted(
        con.sql(
            f"select {cols}, count(*) from {model} group by {cols} having count(*) > 1"
        ).fetchall(),
        key=repr,
    )


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "create table samples as select * from (values"
        " ('a', 1, 10), ('a', 1, 10), ('a', 1, 11), ('b', null, 10), ('b', null, 10),"
        " (null, 2, null), (null, 2, null), (null, 2, null), ('c', 3, 12), (null, null, null)"
        ") as t(source_file, gpu, sampled_epoch)"
    )
    con.create_function(
        "constant_hash", lambda *_: 7, return_type="UBIGINT", null_handling="special"
    )
    return con


@pytest.mark.parametrize("hash_function", ["hash", "constant_hash"])
def test_unique_combination_returns_every_repeated_combination(con, hash_function) -> None:
    columns = ["source_file", "gpu", "sampled_epoch"]
    found = sorted(con.sql(_render("samples", columns, hash_function)).fetchall(), key=repr)
    assert found == _reference(con, "samples", columns)
    assert sorted(found, key=repr) == sorted(
        [("a", 1, 10, 2), ("b", None, 10, 2), (None, 2, None, 3)], key=repr
    )


def test_unique_combination_reads_an_expression_of_columns(con) -> None:
    columns = ["source_file", "cast(gpu as string)"]
    found = con.sql(_render("samples", columns, "constant_hash")).fetchall()
    assert sorted(found, key=repr) == _reference(con, "samples", columns)


def test_unique_combination_passes_a_key(con) -> None:
    con.execute("create table keyed as select distinct * from samples")
    assert con.sql(_render("keyed", ["source_file", "gpu", "sampled_epoch"])).fetchall() == []
    # every row collides, no two rows are equal: still nothing
    assert (
        con.sql(
            _render("keyed", ["source_file", "gpu", "sampled_epoch"], "constant_hash")
        ).fetchall()
        == []
    )
