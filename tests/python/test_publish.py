"""``gpucost publish``: every mart as Parquet, exact types, atomic replacement, refusals."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gpucost.commands.cli import main
from gpucost.commands.publish import PublishError, publish_marts

MONEY_COLUMNS = (
    "billed_cost",
    "effective_cost",
    "utilised_cost",
    "wasted_cost",
    "allocated_billed_cost",
    "billed_residual",
)


def _marts(warehouse: Path) -> dict[str, dict[str, str]]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute(
            """
            select table_name, column_name, data_type
            from information_schema.columns
            where table_schema = 'marts'
            order by table_name, ordinal_position
            """
        ).fetchall()
    tables: dict[str, dict[str, str]] = {}
    for table, column, data_type in rows:
        tables.setdefault(table, {})[column] = data_type
    return tables


@pytest.fixture(scope="module")
def published(generated_warehouse, tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("published") / "parquet"
    publish_marts(generated_warehouse.path, out_dir, log=None)
    return out_dir


def test_every_mart_is_published_with_its_rows(generated_warehouse, tmp_path):
    out_dir = tmp_path / "parquet"
    result = publish_marts(generated_warehouse.path, out_dir, log=None)
    marts = _marts(generated_warehouse.path)
    assert {"fct_cost_allocation", "fct_chargeback_monthly", "rpt_reconciliation"} <= set(marts)
    assert set(result) == set(marts)
    assert sorted(path.name for path in out_dir.iterdir()) == sorted(f"{t}.parquet" for t in marts)
    for table in marts:
        expected = generated_warehouse.sql(f"select count(*) from marts.{table}")[0][0]
        assert result[table]["rows"] == expected, table
        assert pq.ParquetFile(out_dir / f"{table}.parquet").metadata.num_rows == expected, table
    assert result["fct_cost_allocation"]["rows"] > 100


def test_parquet_types_are_exact(generated_warehouse, published):
    marts = _marts(generated_warehouse.path)
    for table, columns in marts.items():
        schema = pq.read_schema(published / f"{table}.parquet")
        assert schema.names == list(columns), table
        for field in schema:
            assert not pa.types.is_floating(field.type), f"{table}.{field.name}: {field.type}"
            duck = columns[field.name]
            assert "HUGEINT" not in duck and "DOUBLE" not in duck, f"{table}.{field.name}"
            if duck.startswith("DECIMAL"):
                assert pa.types.is_decimal(field.type), f"{table}.{field.name}: {field.type}"
                assert duck == f"DECIMAL({field.type.precision},{field.type.scale})"
            if field.name in MONEY_COLUMNS:
                assert pa.types.is_decimal(field.type), f"{table}.{field.name} is not DECIMAL"
    allocation = pq.read_schema(published / "fct_cost_allocation.parquet")
    assert allocation.field("billed_cost").type == pa.decimal128(38, 18)


def test_totals_read_back_from_parquet_equal_the_warehouse(generated_warehouse, published):
    checks = {
        "fct_cost_allocation": "sum(billed_cost), sum(effective_cost), sum(allocation_ratio)",
        "fct_chargeback_monthly": "sum(billed_cost), sum(effective_cost), sum(idle_cost)",
        "fct_gpu_usage": "sum(billed_cost), sum(utilised_cost), sum(wasted_cost), sum(gpu_hours)",
        "rpt_reconciliation": "sum(billed_cost), sum(allocated_billed_cost), sum(billed_residual)",
    }
    with duckdb.connect(":memory:") as con:
        for table, sums in checks.items():
            expected = generated_warehouse.sql(f"select {sums} from marts.{table}")
            path = str(published / f"{table}.parquet")
            got = con.execute(f"select {sums} from read_parquet(?)", [path]).fetchall()
            assert got == expected, table
            assert all(isinstance(value, Decimal) for value in got[0]), table
        # per team, to the last of the 18 decimals
        query = "select team_id, sum(billed_cost) from {} group by 1 order by 1"
        path = str(published / "fct_cost_allocation.parquet")
        by_team = con.execute(query.format("read_parquet(?)"), [path]).fetchall()
    assert by_team == generated_warehouse.sql(query.format("marts.fct_cost_allocation"))
    # and independently of DuckDB: pyarrow's decimals summed in Python
    column = pq.read_table(published / "fct_cost_allocation.parquet", columns=["billed_cost"])
    python_total = sum(column.column("billed_cost").to_pylist(), Decimal(0))
    bill = generated_warehouse.sql("select sum(billed_cost) from marts.rpt_reconciliation")[0][0]
    assert python_total == bill
    assert bill > 1000


def test_publishing_again_while_a_reader_holds_the_old_file(generated_warehouse, tmp_path):
    out_dir = tmp_path / "parquet"
    publish_marts(generated_warehouse.path, out_dir, log=None)
    target = out_dir / "fct_cost_allocation.parquet"
    old_total = generated_warehouse.sql("select sum(billed_cost) from marts.fct_cost_allocation")
    old_rows = pq.ParquetFile(target).metadata.num_rows

    # A second warehouse version whose mart differs: without the idle rows.
    changed = generated_warehouse.copy("publish_changed")
    with duckdb.connect(str(changed)) as con:
        con.execute("delete from marts.fct_cost_allocation where allocation_kind = 'idle'")
        new_total = con.execute("select sum(billed_cost) from marts.fct_cost_allocation").fetchall()
        new_rows = con.execute("select count(*) from marts.fct_cost_allocation").fetchall()[0][0]
    assert new_rows < old_rows

    with target.open("rb") as handle:
        reader = pq.ParquetFile(handle)  # the reader has the file open, reads lazily
        assert reader.metadata.num_rows == old_rows
        old_inode = target.stat().st_ino
        publish_marts(changed, out_dir, log=None)
        publish_marts(changed, out_dir, log=None)  # twice: the second replaces the first
        assert target.stat().st_ino != old_inode
        held = reader.read(columns=["billed_cost"]).column("billed_cost").to_pylist()
    assert len(held) == old_rows
    assert [(sum(held, Decimal(0)),)] == old_total

    with duckdb.connect(":memory:") as con:
        fresh = con.execute(
            "select sum(billed_cost), count(*) from read_parquet(?)", [str(target)]
        ).fetchall()
    assert fresh == [(new_total[0][0], new_rows)]
    leftovers = [path.name for path in out_dir.iterdir() if not path.name.endswith(".parquet")]
    assert leftovers == [], "temporary files left behind"


@pytest.mark.parametrize(
    ("expression", "type_name"),
    [("sum(bill_line_count)", "HUGEINT"), ("avg(bill_line_count)", "DOUBLE")],
)
def test_a_mart_with_an_inexact_column_is_refused(
    generated_warehouse, tmp_path, expression, type_name, capsys
):
    out_dir = tmp_path / "parquet"
    publish_marts(generated_warehouse.path, out_dir, log=None)
    before = {path.name: path.read_bytes() for path in out_dir.iterdir()}

    bad = generated_warehouse.copy(f"publish_{type_name.lower()}")
    with duckdb.connect(str(bad)) as con:
        con.execute(
            "create table marts.rpt_line_totals as select billing_currency, "
            f"{expression} as bill_line_count from marts.rpt_reconciliation group by 1"
        )
        assert con.execute(
            "select data_type from information_schema.columns "
            "where table_name = 'rpt_line_totals' and column_name = 'bill_line_count'"
        ).fetchall() == [(type_name,)]

    with pytest.raises(PublishError) as refused:
        publish_marts(bad, out_dir, log=None)
    message = str(refused.value)
    assert f"marts.rpt_line_totals.bill_line_count ({type_name})" in message
    assert "DECIMAL" in message
    # nothing was written: the published files are the good ones, byte for byte
    assert {path.name: path.read_bytes() for path in out_dir.iterdir()} == before

    assert main(["publish", "--warehouse", str(bad), "--out", str(out_dir)]) == 1
    assert "marts.rpt_line_totals.bill_line_count" in capsys.readouterr().err


def test_cli_publish_default_dir_and_warehouse_is_closed(
    generated_warehouse, tmp_path, monkeypatch, capsys
):
    warehouse = tmp_path / "wh" / "gpucost.duckdb"
    warehouse.parent.mkdir()
    warehouse.write_bytes(generated_warehouse.path.read_bytes())
    monkeypatch.delenv("GPUCOST_PARQUET_DIR", raising=False)
    assert main(["publish", "--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    rows = generated_warehouse.sql("select count(*) from marts.fct_cost_allocation")[0][0]
    assert "fct_cost_allocation" in out and f"{rows:,} rows" in out
    assert (warehouse.parent / "parquet" / "fct_cost_allocation.parquet").is_file()
    # closed: a writer can open the file again in this very process
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create table main.probe as select 1 as x")

    env_dir = tmp_path / "from_env"
    monkeypatch.setenv("GPUCOST_PARQUET_DIR", str(env_dir))
    assert main(["publish", "--warehouse", str(warehouse)]) == 0
    assert (env_dir / "rpt_reconciliation.parquet").is_file()
    assert "Published" in capsys.readouterr().out


def test_missing_warehouse_is_a_clear_error(tmp_path):
    with pytest.raises(PublishError, match="no warehouse"):
        publish_marts(tmp_path / "nope.duckdb", tmp_path / "out", log=None)
