"""The one exact split of the production core (gpucost.core.split.split_lines, narwhals on Polars, its engine under dbt-duckdb)
against the reference's (tests.python.reference.allocation.split_exact, Python integers), by
hypothesis: equal to the 1e-18 unit for any amounts (credits, 18 decimals, up to 9.2e18) and
weights, hence conserving, sign-keeping, within one unit of proportional and order-free as the
reference is (tests/python/test_money.py proves those of the reference)."""

from __future__ import annotations

import narwhals as nw
import polars as pl
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucost.core.money import from_units
from gpucost.core.split import money_columns, money_value, split_lines
from tests.python.reference.allocation import split_exact

AMOUNT_UNITS = st.one_of(
    st.integers(min_value=-(10**21), max_value=10**21),
    st.integers(min_value=-(9 * 10**36), max_value=9 * 10**36),
)
WEIGHTS = st.dictionaries(
    st.text(alphabet="abcxyz", min_size=1, max_size=3),
    st.one_of(st.integers(min_value=0, max_value=10), st.integers(min_value=0, max_value=10**12)),
    min_size=1,
    max_size=6,
).filter(lambda weights: sum(weights.values()) > 0)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(AMOUNT_UNITS, AMOUNT_UNITS, WEIGHTS), min_size=1, max_size=6))
def test_split_lines_equals_the_reference_split(lines):
    money = {"charge_id": [], "a_whole": [], "a_frac": [], "b_whole": [], "b_frac": []}
    weights = {"charge_id": [], "key": [], "weight": [], "_tie": []}
    for i, (a, b, shares) in enumerate(lines):
        money["charge_id"].append(f"l{i}")
        for name, units in (("a", a), ("b", b)):
            whole, frac = money_columns(from_units(units))
            money[f"{name}_whole"].append(whole)
            money[f"{name}_frac"].append(frac)
        for key, weight in shares.items():
            weights["charge_id"].append(f"l{i}")
            weights["key"].append(key)
            weights["weight"].append(weight)
            weights["_tie"].append(repr(key))  # the reference's tie-break
    split = split_lines(
        nw.from_native(pl.from_arrow(pa.table(money)).lazy()),
        nw.from_native(pl.from_arrow(pa.table(weights)).lazy()),
        line_key="charge_id",
        tie_key="_tie",
        money=("a", "b"),
    )
    got = {
        (row["charge_id"], row["key"]): (
            money_value(row["a_whole"], row["a_frac"]),
            money_value(row["b_whole"], row["b_frac"]),
        )
        for row in split.collect(backend="pyarrow").to_native().to_pylist()
    }
    expected = {}
    for i, (a, b, shares) in enumerate(lines):
        positive = {key: weight for key, weight in shares.items() if weight > 0}
        a_parts, b_parts = split_exact(a, positive), split_exact(b, positive)
        for key in positive:
            expected[(f"l{i}", key)] = (from_units(a_parts[key]), from_units(b_parts[key]))
    assert got == expected


def test_each_line_takes_the_one_step_split_within_the_128_bit_bound(monkeypatch):
    """A line whose amount x total weight stays below split.WIDE_BOUND is divided in one 128-bit
    step, a line beyond it by the long division, in the same split; both equal the reference,
    to the unit, ties and credits included."""
    from gpucost.core import split as split_module

    seen: dict[str, set[str]] = {"wide": set(), "limbs": set()}
    for path, name in (("wide", "_split_money_wide"), ("limbs", "_split_money_limbs")):
        original = getattr(split_module, name)

        def spy(rows, *args, _original=original, _path=path):
            seen[_path] |= {r[0] for r in rows.select("charge_id").collect().rows()}
            return _original(rows, *args)

        monkeypatch.setattr(split_module, name, spy)
    lines = {
        "small": (-(10**20) - 7, {"x": 3, "y": 3, "z": 1}),  # a credit, tied remainders
        "edge": (10**24, {"x": 5 * 10**13, "y": 5 * 10**13 - 10**8}),  # (1e6 + 1) x total < 1e20
        "huge": (9 * 10**36 + 11, {"x": 10**12, "y": 7}),  # beyond: 9e18 whole x 1e12
        "max": ((2**63 - 1) * 10**18, {"x": 1, "y": 2}),  # the largest whole, x 3: within
        "max_heavy": (-(2**63 - 1) * 10**18, {"x": 10**12, "y": 1}),  # beyond, no Int64 wrap
    }
    money = {"charge_id": [], "a_whole": [], "a_frac": []}
    weights = {"charge_id": [], "key": [], "weight": [], "_tie": []}
    for line, (units, shares) in lines.items():
        whole, frac = money_columns(from_units(units))
        money["charge_id"].append(line)
        money["a_whole"].append(whole)
        money["a_frac"].append(frac)
        for key, weight in shares.items():
            weights["charge_id"].append(line)
            weights["key"].append(key)
            weights["weight"].append(weight)
            weights["_tie"].append(repr(key))
    split = split_lines(
        nw.from_native(pl.from_arrow(pa.table(money)).lazy()),
        nw.from_native(pl.from_arrow(pa.table(weights)).lazy()),
        line_key="charge_id",
        tie_key="_tie",
        money=("a",),
    )
    got = {
        (row["charge_id"], row["key"]): money_value(row["a_whole"], row["a_frac"])
        for row in split.collect(backend="pyarrow").to_native().to_pylist()
    }
    expected = {
        (line, key): from_units(part)
        for line, (units, shares) in lines.items()
        for key, part in split_exact(units, shares).items()
    }
    assert got == expected
    assert seen == {"wide": {"small", "edge", "max"}, "limbs": {"huge", "max_heavy"}}
