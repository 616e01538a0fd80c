"""gpucost.engines.lazy_io: DECIMAL(38, 18) money in and out of the lazy core's whole / frac pairs, exactly,
inside DuckDB; and the volume model's path (relations in, relation out) equal to the row core."""

from __future__ import annotations

import random
from decimal import Decimal

import duckdb
import narwhals as nw
import pyarrow as pa
import pytest

from gpucost.core import storage
from gpucost.core.lazy_allocation import WeightBoundError, allocate_volume_lines, money_columns
from gpucost.engines.arrow_io import MONEY, VOLUME_CLAIM_SCHEMA, table_of
from gpucost.engines.lazy_io import from_lazy, lazy_or_rows, list_elements, to_lazy

D = Decimal
MAX = D("99999999999999999999.999999999999999999")  # the largest DECIMAL(38, 18)
BIGINT_MAX = 2**63 - 1

EDGE_AMOUNTS = [
    D(0),
    D("1e-18"),
    D("-1e-18"),
    D("0.999999999999999999"),
    D("-0.999999999999999999"),
    D(1),
    D(-1),
    D("-12.5"),
    D("-12.000000000000000001"),
    D("123456789.123456789123456789"),
    D("-123456789.123456789123456789"),
    D(f"{BIGINT_MAX}.999999999999999999"),
    D(f"-{BIGINT_MAX}.999999999999999999"),
]


@pytest.fixture
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


def _amounts(con, values):
    table = pa.table(
        {"id": list(range(len(values))), "amount": pa.array(values, MONEY)},
    )
    return con.from_arrow(table)


def test_round_trip_of_edge_amounts(con):
    relation = _amounts(con, [*EDGE_AMOUNTS, None])
    frame = to_lazy(relation, ["amount"])
    assert frame.collect_schema().names() == ["id", "amount_whole", "amount_frac"]
    pairs = frame.sort("id").collect(backend="pyarrow").to_native()
    assert pairs.schema.field("amount_whole").type == pa.int64()
    assert pairs.schema.field("amount_frac").type == pa.int64()
    wholes = pairs.column("amount_whole").to_pylist()
    fracs = pairs.column("amount_frac").to_pylist()
    # whole truncated toward zero, frac with the same sign: as money_columns
    assert list(zip(wholes, fracs, strict=True)) == [
        *(money_columns(value) for value in EDGE_AMOUNTS),
        (None, None),
    ]
    schema = pa.schema([("id", pa.int64()), ("amount", MONEY)])
    back = from_lazy(frame, schema, order_by=["id"])
    assert back.columns == ["id", "amount"]
    assert [str(t) for t in back.types] == ["BIGINT", "DECIMAL(38,18)"]
    assert [row[1] for row in back.fetchall()] == [*EDGE_AMOUNTS, None]


def test_pairs_back_to_decimal_without_float(con):
    # every pair the lazy core may return (same signs, |frac| < 1e18) and a few beyond it
    pairs = [(0, 0), (0, -1), (-5, -(10**18 - 1)), (BIGINT_MAX, 10**18 - 1), (3, 10**18), (-1, 2)]
    relation = con.from_arrow(
        pa.table(
            {
                "v_whole": pa.array([w for w, _ in pairs], pa.int64()),
                "v_frac": pa.array([f for _, f in pairs], pa.int64()),
            }
        )
    )
    back = from_lazy(nw.from_native(relation), pa.schema([("v", MONEY)]))
    assert [row[0] for row in back.fetchall()] == [D(w) + D(f) * D("1e-18") for w, f in pairs]


def test_amount_beyond_bigint_fails(con):
    frame = to_lazy(_amounts(con, [MAX]), ["amount"])
    with pytest.raises(duckdb.ConversionException):
        frame.collect(backend="pyarrow")


def test_bad_arguments(con):
    with pytest.raises(ValueError, match="not in the relation"):
        to_lazy(_amounts(con, [D(1)]), ["billed_cost"])
    frame = nw.from_native(con.sql("select 1::bigint as x"))
    with pytest.raises(TypeError, match="no SQL type"):
        from_lazy(frame, pa.schema([("x", pa.int32())]))
    with pytest.raises(TypeError, match="on DuckDB"):
        from_lazy(nw.from_native(pa.table({"x": [1]})).lazy(), pa.schema([("x", pa.int64())]))


def test_list_elements_is_the_long_frame_of_a_list_column(con):
    relation = con.sql(
        "select * from (values ('a', ['x', 'y', null, 'x']), ('b', []), ('c', null), ('d', ['z']))"
        " as t(charge_id, scope_keys)"
    )
    frame = list_elements(relation, "charge_id", "scope_keys")
    assert frame.collect_schema().names() == ["charge_id", "scope_rank", "scope_key"]
    rows = frame.sort("charge_id", "scope_rank").collect(backend="pyarrow").to_native().to_pylist()
    assert [tuple(r.values()) for r in rows] == [
        ("a", 1, "x"), ("a", 2, "y"), ("a", 3, None), ("a", 4, "x"), ("d", 1, "z"),
    ]  # fmt: skip


def test_volume_model_path_equals_row_core(con):
    """int_volume_costs_prorated's path: DECIMAL relations in, the lazy core, a relation out with
    VOLUME_CLAIM_SCHEMA's columns and types, rows equal to gpucost.core.storage's (and in its order)."""
    rng = random.Random(11)
    lines, mounts = [], []
    for i in range(25):
        billed = D(rng.randrange(-(10**6), 10**9)) / 1000 + D(rng.randrange(10**15)) / D(10**18)
        lines.append(
            {
                "charge_id": f"v{i:02d}",
                "volume_key": rng.choice([None, "vol-0abc"]),
                "persistent_volume_ids": rng.choice([None, "east/pv-1"]),
                "claim_ids": rng.choice([None, "", "ns/claim-a", "ns/a, ns/b"]),
                "billed_cost": billed,
                "effective_cost": (billed * D("0.87")).quantize(D("1e-18")),
                "period_start_epoch": 0,
            }
        )
        for _ in range(rng.choice([0, 1, 2, 5])):
            mounts.append(
                {
                    "charge_id": f"v{i:02d}",
                    "workload_id": rng.choice([None, f"p{rng.randrange(6)}"]),
                    "mounted_ms": rng.choice([0, None, 1, 7, rng.randrange(3_600_000 * 24)]),
                }
            )
    line_schema = pa.schema(
        [
            ("charge_id", pa.string()),
            ("volume_key", pa.string()),
            ("persistent_volume_ids", pa.string()),
            ("claim_ids", pa.string()),
            ("billed_cost", MONEY),
            ("effective_cost", MONEY),
            ("period_start_epoch", pa.int64()),
        ]
    )
    mount_schema = pa.schema(
        [("charge_id", pa.string()), ("workload_id", pa.string()), ("mounted_ms", pa.int64())]
    )
    line_relation = con.from_arrow(table_of(lines, line_schema))
    mount_relation = con.from_arrow(table_of(mounts, mount_schema))
    allocated = allocate_volume_lines(
        to_lazy(line_relation, ("billed_cost", "effective_cost")), to_lazy(mount_relation, ())
    )
    out = from_lazy(allocated, VOLUME_CLAIM_SCHEMA, order_by=("charge_id", "workload_id"))
    got = out.to_arrow_table()
    assert got.schema == VOLUME_CLAIM_SCHEMA
    expected = table_of(storage.allocate_volume_lines(lines, mounts), VOLUME_CLAIM_SCHEMA)
    assert got.to_pylist() == expected.to_pylist()
    assert any(row["allocation_kind"] == "unallocated" for row in got.to_pylist())
    assert sum(row["allocation_kind"] == "usage" for row in got.to_pylist()) >= 5


def test_lazy_or_rows_picks_the_core_by_size_and_hands_over_beyond_the_bound(capsys):
    calls = []

    def lazy():
        calls.append("lazy")
        return "lazy"

    def rows():
        calls.append("rows")
        return "rows"

    assert lazy_or_rows(lazy, rows, "m", size=199_999, min_rows=200_000) == "rows"
    assert lazy_or_rows(lazy, rows, "m", size=200_000, min_rows=200_000) == "lazy"
    assert lazy_or_rows(lazy, rows, "m", size=10**9, min_rows=None) == "rows"
    assert calls == ["rows", "lazy", "rows"]

    def too_big():
        raise WeightBoundError("a split's total weight 9 exceeds 8")

    assert lazy_or_rows(too_big, rows, "int_x", size=5, min_rows=0) == "rows"
    assert (
        "int_x: a split's total weight 9 exceeds 8; running the row core" in capsys.readouterr().err
    )

    def broken():
        raise ValueError("unknown allocation basis 'median'")

    with pytest.raises(ValueError, match="median"):  # other errors are not swallowed
        lazy_or_rows(broken, rows, "int_x", size=5, min_rows=0)
