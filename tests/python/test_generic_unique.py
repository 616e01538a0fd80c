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


def _render(
    model: str, columns: list[str], hash_function: str = "hash", rows_to_check: str | None = None
) -> str:
    """The test's query for ``model``: the body of its ``{% test %}`` block rendered by Jinja2 (the
    block tag is dbt's; the body is plain Jinja), ``hash`` renamed when asked; ``rows_to_check`` as
    written (the project's render_test_scope renders its placeholders in a build)."""
    text = TEST_SQL.read_text(encoding="utf-8")
    body = re.search(r"{%\s*test [^%]*%}(.*){%\s*endtest\s*%}", text, re.S)
    assert body is not None
    sql = jinja2.Template(body.group(1)).render(
        model=model,
        combination_of_columns=columns,
        rows_to_check=rows_to_check,
        render_test_scope=lambda condition: condition,
    )
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


@pytest.mark.parametrize("hash_function", ["hash", "constant_hash"])
def test_rows_to_check_find_a_new_row_repeating_a_kept_one_and_only_what_involves_new_rows(
    con, hash_function
) -> None:
    """With rows_to_check, the combinations of those rows are looked for among every row: a new row
    repeating a kept one fails; repeats among kept rows only were checked when they came and are not
    looked for (unless their hash collides with a new row's: then they are found too, and they are true
    repeats); 'true' is the whole check, 'false' finds nothing."""
    columns = ["source_file", "gpu", "sampled_epoch"]
    con.execute("create table kept as select *, false as is_new from samples")
    # a new row repeating the kept key ('c', 3, 12), and a new key of its own
    con.execute("insert into kept values ('c', 3, 12, true), ('d', 4, 13, true)")
    found = sorted(con.sql(_render("kept", columns, hash_function, "is_new")).fetchall(), key=repr)
    if hash_function == "hash":
        assert found == [("c", 3, 12, 2)]
    else:
        # every hash collides with a new row's: what is found is still a true repeat, never a false one
        assert ("c", 3, 12, 2) in found and set(found) <= set(_reference(con, "kept", columns))
    every = sorted(con.sql(_render("kept", columns, hash_function, "true")).fetchall(), key=repr)
    assert every == _reference(con, "kept", columns)
    assert con.sql(_render("kept", columns, hash_function, "false")).fetchall() == []
