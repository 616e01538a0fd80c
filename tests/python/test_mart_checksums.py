"""scripts/mart_checksums.py: the digest is the same for the same rows in any order, and changes with
any row."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import duckdb

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mart_checksums.py"


def _checksums():
    spec = importlib.util.spec_from_file_location("mart_checksums", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.checksums


def _warehouse(path: Path, rows: list[tuple]) -> str:
    with duckdb.connect(str(path)) as con:
        con.execute("create schema marts")
        con.execute("create table marts.fct (team varchar, cost decimal(38, 18))")
        con.executemany("insert into marts.fct values (?, ?)", rows)
        con.execute("create table marts.empty (x integer)")
    return str(path)


def test_same_rows_in_any_order_give_the_same_digest(tmp_path: Path) -> None:
    checksums = _checksums()
    rows = [(f"team-{i % 7}", i / 100) for i in range(5000)] + [("a", 1), ("a", 1)]
    one = checksums(_warehouse(tmp_path / "a.duckdb", rows), ("marts",))
    two = checksums(_warehouse(tmp_path / "b.duckdb", rows[::-1]), ("marts",))
    assert one == two and set(one) == {"marts.fct", "marts.empty"}
    # one cent moved, or a duplicate dropped: another digest
    moved = [("team-0", 0.01), *rows[1:]]
    assert (
        checksums(_warehouse(tmp_path / "c.duckdb", moved), ("marts",))["marts.fct"]
        != one["marts.fct"]
    )
    dropped = rows[:-1]
    assert (
        checksums(_warehouse(tmp_path / "d.duckdb", dropped), ("marts",))["marts.fct"]
        != one["marts.fct"]
    )
