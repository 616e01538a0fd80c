"""gpucost.engines.spark_io on local PySpark: DECIMAL(38, 18) DataFrames in and out of the lazy cores, exactly
(the Databricks side of test_lazy_io.py)."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from gpucost.core import storage
from gpucost.core.lazy_allocation import allocate_volume_lines
from gpucost.engines import spark_io
from gpucost.engines.arrow_io import MONEY, VOLUME_CLAIM_SCHEMA
from tests.python.test_lazy_allocation import random_volume_fleet

D = Decimal

pytestmark = pytest.mark.xdist_group("spark")

EDGES = [
    D("0"),
    D("1e-18"),
    D("-1e-18"),
    D("-123.000000000000000001"),
    D("0.999999999999999999"),
    D("-0.5"),
    D("9000000000000000000.999999999999999999"),
    D("-9000000000000000000.999999999999999999"),
]


def _frame(spark, rows: list[dict], schema: pa.Schema):
    table = pa.Table.from_pylist(rows, schema=schema)
    return spark.createDataFrame(table)


def test_money_round_trips_exactly_through_the_core_columns(spark):
    schema = pa.schema([("id", pa.int64()), ("amount", MONEY)])
    rows = [{"id": i, "amount": a} for i, a in enumerate([*EDGES, None])]
    frame = spark_io.to_lazy(_frame(spark, rows, schema), ["amount"])
    pairs = frame.select("id", "amount_whole", "amount_frac").collect().to_native().to_pylist()
    by_id = {p["id"]: p for p in pairs}
    assert by_id[3] == {"id": 3, "amount_whole": -123, "amount_frac": -1}
    assert by_id[5]["amount_whole"] == 0 and by_id[5]["amount_frac"] == -(5 * 10**17)
    back = spark_io.from_lazy(frame, schema, order_by=["id"])
    assert dict(back.dtypes)["amount"] == "decimal(38,18)"
    assert [r["amount"] for r in back.collect()] == [*EDGES, None]


def test_an_amount_beyond_64_bits_fails_with_its_column(spark):
    """With ANSI mode off (as dbt-spark runs), Spark's overflowing cast is a silent null: to_lazy
    counts them and names the column. (With ANSI on, Spark raises on its own.)"""
    schema = pa.schema([("billed_cost", MONEY)])
    frame = _frame(
        spark, [{"billed_cost": D("9300000000000000000")}, {"billed_cost": D(1)}], schema
    )
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        with pytest.raises(ValueError, match="billed_cost: 1 amounts do not fit"):
            spark_io.to_lazy(frame, ["billed_cost"])
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)


def test_volume_lines_on_spark_decimals_equal_row_core(spark):
    """A dbt-databricks model's path: DECIMAL DataFrames in, the lazy core, a DECIMAL DataFrame out."""
    lines, mounts = random_volume_fleet(8, 10)
    line_schema = pa.schema(
        [
            ("charge_id", pa.string()),
            ("billed_cost", MONEY),
            ("effective_cost", MONEY),
            ("claim_ids", pa.string()),
            ("persistent_volume_ids", pa.string()),
            ("volume_key", pa.string()),
        ]
    )
    mount_schema = pa.schema(
        [("charge_id", pa.string()), ("workload_id", pa.string()), ("mounted_ms", pa.int64())]
    )
    allocated = allocate_volume_lines(
        spark_io.to_lazy(_frame(spark, lines, line_schema), ("billed_cost", "effective_cost")),
        spark_io.to_lazy(_frame(spark, mounts, mount_schema), ()),
    )
    out = spark_io.from_lazy(allocated, VOLUME_CLAIM_SCHEMA, order_by=("charge_id", "workload_id"))
    assert out.columns == VOLUME_CLAIM_SCHEMA.names
    got = [r.asDict() for r in out.collect()]
    expected = sorted(
        storage.allocate_volume_lines(lines, mounts),
        key=lambda r: (r["charge_id"], r["workload_id"] or ""),
    )
    assert got == [{f: r[f] for f in VOLUME_CLAIM_SCHEMA.names} for r in expected]


def test_attribution_trains_and_scores_the_same_from_a_spark_dataframe(spark):
    """The learned attribution has no lazy form (it trains in memory on one row per workload): on
    Spark its model collects the features to the driver (arrow_io.rows_of reads a DataFrame through
    toArrow) and returns its table to Spark. Both crossings change nothing: the same rows in, the
    same predictions, and the same scored table back out of Spark."""
    from gpucost.core.attribution import attribute, attribution_rows
    from gpucost.engines.arrow_io import ATTRIBUTION_SCHEMA, rows_of, table_of
    from tests.python.test_attribution import PROJECTS, _records

    records = _records(400, seed=3)
    for i, record in enumerate(records):
        record["image_digest"] = None if i % 4 else f"sha256:{i % 7:064x}"
        record["util_mean"] = None if i % 9 == 0 else 37.5 + i % 11
        if i % 3 == 0:
            record["known_project_id"] = None
    frame = spark.createDataFrame(pa.Table.from_pylist(records))
    collected = rows_of(frame)
    assert collected == records
    kwargs = {"training_days": None, "holdout_fraction": 0.2, "seed": 1, "explain_below": 0.9}
    on_spark = attribute(collected, PROJECTS, **kwargs)
    local = attribute(records, PROJECTS, **kwargs)
    assert on_spark.predictions == local.predictions and on_spark.holdout == local.holdout
    assert len(on_spark.predictions) == 134
    table = table_of(attribution_rows(on_spark), ATTRIBUTION_SCHEMA)
    back = rows_of(spark.createDataFrame(table))
    assert back == table.to_pylist() and len(back) > len(on_spark.predictions)
