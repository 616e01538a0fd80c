"""gpucost.engines.lazy_io: DECIMAL(38, 18) money in and out of the core's whole / frac pairs,
exactly, on both engines a dbt Python model hands over (a DuckDB relation, whose rows the core reads
on Polars, and a PySpark DataFrame);
a model's whole path (engine frames in, :func:`allocate`, an engine frame out) equal to the
reference row core; and the one-line failure beyond the exact split's bound.
Set GPUCOST_REQUIRE_SPARK=1 (scripts/test.sh does) to fail rather than skip without pyspark."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import narwhals as nw
import pyarrow as pa
import pytest

from gpucost.core.idle import spread_idle_with_reservations
from gpucost.core.split import MAX_TOTAL_WEIGHT, WeightBoundError, money_columns
from gpucost.core.storage import allocate_volume_lines
from gpucost.engines.arrow_io import IDLE_SPREAD_SCHEMA, MONEY, VOLUME_CLAIM_SCHEMA, table_of
from gpucost.engines.lazy_io import Lines, allocate, from_lazy, list_elements, to_lazy
from tests.python.core_frames import SCOPE_SCHEMA, scope_rows, table
from tests.python.reference import storage as reference
from tests.python.test_core_allocation import random_volume_fleet
from tests.python.test_core_spread import (
    CLAIM_SCHEMA,
    IDLE_ROW_SCHEMA,
    IDLE_WEIGHT_SCHEMA,
    idle_case,
)

D = Decimal
BIGINT_MAX = 2**63 - 1

pytestmark = pytest.mark.xdist_group("spark")

EDGE_AMOUNTS = [
    D(0),
    D("1e-18"),
    D("-1e-18"),
    D("0.999999999999999999"),
    D("-0.999999999999999999"),
    D(1),
    D("-12.5"),
    D("-123.000000000000000001"),
    D("123456789.123456789123456789"),
    D("9000000000000000000.999999999999999999"),
    D("-9000000000000000000.999999999999999999"),
]
# DuckDB holds a whole part up to the BIGINT limit itself; the Spark side refuses from 2**63 - 1 up
DUCKDB_EDGES = [D(f"{BIGINT_MAX}.999999999999999999"), D(f"-{BIGINT_MAX}.999999999999999999")]


@pytest.fixture(params=["duckdb", "pyspark"])
def native(request):
    """Turns rows and a pyarrow schema into the engine's own frame (what dbt.ref returns)."""
    if request.param == "duckdb":
        con = duckdb.connect()
        yield lambda rows, schema: con.from_arrow(table_of(rows, schema))
        con.close()
    else:
        spark = request.getfixturevalue("spark")
        yield lambda rows, schema: spark.createDataFrame(table_of(rows, schema))


def _fetch(out) -> list[dict]:
    """An engine frame's rows as dicts (Decimal money)."""
    if isinstance(out, pa.Table):  # dbt-duckdb's: the core ran on Polars
        return out.to_pylist()
    if isinstance(out, duckdb.DuckDBPyRelation):
        return out.to_arrow_table().to_pylist()
    return [row.asDict() for row in out.collect()]


def test_money_round_trips_exactly_through_the_core_columns(native, request):
    on_duckdb = request.node.callspec.params["native"] == "duckdb"
    edges = EDGE_AMOUNTS + (DUCKDB_EDGES if on_duckdb else [])
    schema = pa.schema([("id", pa.int64()), ("amount", MONEY)])
    frame = to_lazy(
        native([{"id": i, "amount": a} for i, a in enumerate([*edges, None])], schema),
        ["amount"],
    )
    assert frame.collect_schema().names() == ["id", "amount_whole", "amount_frac"]
    pairs = frame.sort("id").collect(backend="pyarrow").to_native()
    assert pairs.schema.field("amount_whole").type == pa.int64()
    # whole truncated toward zero, frac with the same sign: as money_columns
    wholes, fracs = (
        pairs.column("amount_whole").to_pylist(),
        pairs.column("amount_frac").to_pylist(),
    )
    assert list(zip(wholes, fracs, strict=True)) == [
        *(money_columns(value) for value in edges),
        (None, None),
    ]
    back = _fetch(from_lazy(frame, schema, order_by=["id"]))
    assert [row["amount"] for row in back] == [*edges, None]


def test_pairs_back_to_decimal_without_float():
    # every pair the core may return (same signs, |frac| < 1e18) and a few beyond it
    pairs = [(0, 0), (0, -1), (-5, -(10**18 - 1)), (BIGINT_MAX, 10**18 - 1), (3, 10**18), (-1, 2)]
    con = duckdb.connect()
    relation = con.from_arrow(
        pa.table({"v_whole": [w for w, _ in pairs], "v_frac": [f for _, f in pairs]})
    )
    back = from_lazy(nw.from_native(relation), pa.schema([("v", MONEY)]))
    assert [row[0] for row in back.fetchall()] == [D(w) + D(f) * D("1e-18") for w, f in pairs]
    assert [str(t) for t in back.types] == ["DECIMAL(38,18)"]


def test_an_amount_beyond_64_bits_fails(native, request):
    """DuckDB fails the conversion; Spark with ANSI mode off (as dbt-spark runs) would wrap around
    silently, so to_lazy counts such amounts and names the column."""
    frame = native([{"billed_cost": D("9300000000000000000")}, {"billed_cost": D(1)}],
                   pa.schema([("billed_cost", MONEY)]))  # fmt: skip
    if isinstance(frame, duckdb.DuckDBPyRelation):
        with pytest.raises(duckdb.ConversionException):
            to_lazy(frame, ["billed_cost"]).collect(backend="pyarrow")
        return
    spark = request.getfixturevalue("spark")
    ansi = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        with pytest.raises(ValueError, match="billed_cost: 1 amounts do not fit"):
            to_lazy(frame, ["billed_cost"])
    finally:
        spark.conf.set("spark.sql.ansi.enabled", ansi)


def test_bad_arguments():
    con = duckdb.connect()
    with pytest.raises(ValueError, match="not in the frame"):
        to_lazy(con.sql("select 1 as amount"), ["billed_cost"])
    frame = nw.from_native(con.sql("select 1::bigint as x"))
    with pytest.raises(TypeError, match="no engine type"):
        from_lazy(frame, pa.schema([("x", pa.int32())]))
    with pytest.raises(TypeError, match="DuckDB, Polars or PySpark"):
        from_lazy(nw.from_native(pa.table({"x": [1]})).lazy(), pa.schema([("x", pa.int64())]))


def test_list_elements_is_the_long_frame_of_a_list_column(native):
    rows = [
        {"charge_id": "a", "scope_keys": ["x", "y", None, "x"]},
        {"charge_id": "b", "scope_keys": []},
        {"charge_id": "c", "scope_keys": None},
        {"charge_id": "d", "scope_keys": ["z"]},
    ]
    schema = pa.schema([("charge_id", pa.string()), ("scope_keys", pa.list_(pa.string()))])
    frame = list_elements(native(rows, schema), "charge_id", "scope_keys")
    assert frame.collect_schema().names() == ["charge_id", "scope_rank", "scope_key"]
    got = frame.sort("charge_id", "scope_rank").collect(backend="pyarrow").to_native().to_pylist()
    assert [tuple(r.values()) for r in got] == [
        ("a", 1, "x"), ("a", 2, "y"), ("a", 3, None), ("a", 4, "x"), ("d", 1, "z"),
    ]  # fmt: skip


LINE_SCHEMA = pa.schema(
    [
        ("charge_id", pa.string()),
        ("billed_cost", MONEY),
        ("effective_cost", MONEY),
        ("claim_ids", pa.string()),
        ("persistent_volume_ids", pa.string()),
        ("volume_key", pa.string()),
    ]
)
MOUNT_SCHEMA = pa.schema(
    [("charge_id", pa.string()), ("workload_id", pa.string()), ("mounted_ms", pa.int64())]
)


def test_a_model_path_equals_the_reference(native):
    """int_volume_costs_prorated's path: DECIMAL frames in, allocate(), a DECIMAL frame out with
    VOLUME_CLAIM_SCHEMA's columns and types, rows equal to the reference core's, in its order."""
    lines, mounts = random_volume_fleet(8, 12)
    out = allocate(
        "int_volume_costs_prorated",
        allocate_volume_lines,
        VOLUME_CLAIM_SCHEMA,
        ("charge_id", "workload_id"),
        to_lazy(native(lines, LINE_SCHEMA), ("billed_cost", "effective_cost")),
        to_lazy(native(mounts, MOUNT_SCHEMA)),
    )
    names = out.column_names if isinstance(out, pa.Table) else list(out.columns)
    assert names == VOLUME_CLAIM_SCHEMA.names
    expected = table_of(
        sorted(
            reference.allocate_volume_lines(lines, mounts),
            key=lambda r: (r["charge_id"], r["workload_id"] or ""),
        ),
        VOLUME_CLAIM_SCHEMA,
    )
    assert _fetch(out) == expected.to_pylist()
    assert {row["allocation_kind"] for row in expected.to_pylist()} == {"usage", "unallocated"}


def _volume_model(
    con, lines: list[dict], mounts: list[dict], session=None, core=None, rows_per_part=None
):
    """int_volume_costs_prorated's model body on DuckDB: its two refs as relations of ``con``, read
    by line (``core``: allocate_volume_lines by default)."""
    return allocate(
        "int_volume_costs_prorated",
        core or allocate_volume_lines,
        VOLUME_CLAIM_SCHEMA,
        ("charge_id", "workload_id"),
        Lines(con.from_arrow(table_of(lines, LINE_SCHEMA)), ("billed_cost", "effective_cost")),
        Lines(con.from_arrow(table_of(mounts, MOUNT_SCHEMA))),
        session=session,
        rows_per_part=rows_per_part,
    )


def _dbt_session(con: duckdb.DuckDBPyConnection):
    """What dbt-duckdb hands a Python model as ``session``: its cursor wrapper around ``con``."""
    from dbt.adapters.duckdb.environments.local import DuckDBCursorWrapper

    return DuckDBCursorWrapper(con)


@pytest.mark.parametrize("wrapped", [True, False], ids=["dbt-duckdb's session", "connection"])
def test_given_the_models_connection_the_result_is_written_from_it_row_for_row(wrapped):
    """With dbt's connection (``session``: dbt-duckdb's cursor wrapper, or the connection itself), a
    model's Polars result comes back as a relation of that connection, which dbt-duckdb writes with
    ``create table ... as select`` under its memory_limit: the table holds the same rows, types and
    order as the Arrow table of the path without it."""
    lines, mounts = random_volume_fleet(8, 12)
    con = duckdb.connect()
    con.execute("set memory_limit = '1GB'")

    alone = _volume_model(con, lines, mounts)
    assert isinstance(alone, pa.Table)
    out = _volume_model(con, lines, mounts, session=_dbt_session(con) if wrapped else con)
    assert isinstance(out, duckdb.DuckDBPyRelation)
    con.register("model_df", out)  # what dbt-duckdb's materialize does with a relation
    con.execute("create table written as select * from model_df")
    written = con.table("written").to_arrow_table()
    assert written.schema == alone.schema
    assert written.to_pylist() == alone.to_pylist()
    assert len(alone) > 0


def test_a_model_read_by_line_in_parts_writes_the_same_rows():
    """Lines inputs with ``rows_per_part``: the core runs once per part of the lines (every line's
    rows in one part, by its key's hash), and the parts' rows are written as one table equal, row
    for row and in order, to the core run once on the whole month."""
    lines, mounts = random_volume_fleet(11, 40)
    con = duckdb.connect()
    runs = []

    def counted(*frames):
        runs.append(frames)
        return allocate_volume_lines(*frames)

    def model(rows_per_part):
        out = _volume_model(con, lines, mounts, _dbt_session(con), counted, rows_per_part)
        return out.to_arrow_table()

    whole = model(None)
    assert len(runs) == 1
    largest = max(len(lines), len(mounts))  # the part count follows the largest Lines input
    for rows_per_part, parts in ((largest, 1), ("7", -(-largest // 7)), (1, largest)):
        runs.clear()
        assert model(rows_per_part) == whole, rows_per_part
        assert len(runs) == parts
    assert whole.num_rows > len(lines) and whole == _volume_model(con, lines, mounts)


IDLE_ORDER = (
    "charge_id", "recipient", "reservation_id", "team_id", "project_id", "recipient_group",
    "workload_id",
)  # fmt: skip


def _core_pairs(relation: duckdb.DuckDBPyRelation) -> nw.LazyFrame:
    """Rows already in the core's columns (money as whole / frac pairs) as its Polars frame."""
    return nw.from_native(relation.to_arrow_table()).lazy("polars")


@pytest.mark.parametrize("policy", ["proportional", "even"])
def test_the_idle_spread_in_cluster_day_parts_writes_the_same_rows(policy):
    """int_gpu_idle_costs_spread's inputs keyed by the cluster-day every scope of a line lies in
    (here: the reservation scope, whose line and day scopes it shares): reservations claimed, the
    rest spread over line and day scopes, in parts of the days equal to one run, row for row."""
    idle_rows, claims, weights = idle_case()
    day = {row["charge_id"]: row["reservation_scope_key"] for row in idle_rows}
    for row in idle_rows:
        row["day"] = row["reservation_scope_key"]
    for row in claims:
        row["day"] = row["reservation_scope_key"]
    for row in weights:
        scope = row["scope_key"]
        row["day"] = day[scope[5:]] if scope.startswith("line:") else scope[4:]
    scopes = scope_rows(idle_rows)
    for row in scopes:
        row["day"] = day[row["charge_id"]]
    keyed = {"day": pa.string()}
    con = duckdb.connect()
    runs = []

    def counted(*frames, **options):
        runs.append(frames)
        return spread_idle_with_reservations(*frames, **options)

    def model(rows_per_part):
        def lines(rows, schema, money=()):
            relation = con.from_arrow(table(rows, {**schema, **keyed}, money))
            return Lines(relation, line_key="day", read=_core_pairs)

        return allocate(
            "int_gpu_idle_costs_spread",
            counted,
            IDLE_SPREAD_SCHEMA,
            IDLE_ORDER,
            lines(
                idle_rows, IDLE_ROW_SCHEMA, ("billed_cost", "effective_cost", "allocation_ratio")
            ),
            lines(claims, CLAIM_SCHEMA),
            lines(scopes, SCOPE_SCHEMA),
            lines(weights, IDLE_WEIGHT_SCHEMA),
            policy=policy,
            session=_dbt_session(con),
            rows_per_part=rows_per_part,
        ).to_arrow_table()

    whole = model(None)
    runs.clear()
    assert model(6) == whole
    assert len(runs) > 3
    assert {"reservation", "workload", "unowned"} <= set(whole.column("recipient").to_pylist())


@pytest.mark.parametrize("bad", [0, "0", "-3", "many", 2.5])
def test_rows_per_part_must_be_a_positive_whole_number(bad):
    con = duckdb.connect()
    lines, mounts = random_volume_fleet(3, 4)
    with pytest.raises(ValueError, match="rows_per_part must be a positive whole number"):
        _volume_model(con, lines, mounts, _dbt_session(con), rows_per_part=bad)


def test_beyond_the_exact_bound_the_model_fails_in_one_line_naming_itself():
    con = duckdb.connect()
    lines = [{"charge_id": "big", "billed_cost": D(1), "effective_cost": D(1)}]
    mounts = [
        {"charge_id": "big", "workload_id": "a", "mounted_ms": MAX_TOTAL_WEIGHT},
        {"charge_id": "big", "workload_id": "b", "mounted_ms": 1},
    ]

    with pytest.raises(WeightBoundError) as failure:
        _volume_model(con, lines, mounts)
    message = str(failure.value)
    assert message == (
        f"int_volume_costs_prorated: a split's total weight {MAX_TOTAL_WEIGHT + 1} exceeds"
        f" the exact split's bound {MAX_TOTAL_WEIGHT}"
    )
    assert "\n" not in message


def test_attribution_trains_and_scores_the_same_from_a_spark_dataframe(spark):
    """The learned attribution has no lazy form (it trains in memory on one row per workload): on
    Spark its model collects the features to the driver (arrow_io.rows_of reads a DataFrame through
    toArrow) and returns its table to Spark. Both crossings change nothing: the same rows in, the
    same predictions, and the same scored table back out of Spark."""
    from gpucost.core.attribution import attribute, attribution_rows
    from gpucost.engines.arrow_io import ATTRIBUTION_SCHEMA, rows_of
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


def test_duckdb_threads_follow_the_setting_and_refuse_a_bad_one(monkeypatch):
    """GPUCOST_DUCKDB_THREADS caps DuckDB's threads on the dbt connection (the plugin); unset, DuckDB
    keeps its own default; anything but a positive whole number is refused in one line."""
    from gpucost.engines.duckdb_plugin import Plugin, duckdb_threads

    plugin = Plugin.__new__(Plugin)  # configure_connection reads no plugin state
    for value, expected in (("3", 3), (None, None)):
        if value is None:
            monkeypatch.delenv("GPUCOST_DUCKDB_THREADS", raising=False)
        else:
            monkeypatch.setenv("GPUCOST_DUCKDB_THREADS", value)
        with duckdb.connect() as con:
            default = con.sql("select current_setting('threads')").fetchall()[0][0]
            plugin.configure_connection(con)
            got = con.sql("select current_setting('threads')").fetchall()[0][0]
        assert got == (default if expected is None else expected)
    assert duckdb_threads(" 2 ") == 2 and duckdb_threads("") is None
    for bad in ("0", "-1", "two", "1; drop table x"):
        with pytest.raises(ValueError, match="GPUCOST_DUCKDB_THREADS must be a whole number"):
            duckdb_threads(bad)
