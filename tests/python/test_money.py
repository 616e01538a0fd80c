"""Exact money: conversion, cent rounding (gpucost.core.money) and the reference's largest-remainder
split (tests.python.reference.allocation.split_exact, which test_core_split.py holds the production
split to)."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucost.core.money import (
    UNIT,
    from_units,
    round_half_away_to_cents,
    round_to_cents,
    to_units,
)
from tests.python.reference.allocation import split_exact

amounts = st.integers(min_value=-(10**30), max_value=10**30)
weight_maps = st.dictionaries(
    st.text(min_size=1, max_size=6),
    st.integers(min_value=0, max_value=10**12),
    min_size=1,
    max_size=30,
).filter(lambda weights: sum(weights.values()) > 0)


def test_units_round_trip_is_exact():
    assert to_units(Decimal("0.00000080000")) == 800_000_000_000
    assert from_units(to_units("-2.6137")) == Decimal("-2.613700000000000000")
    assert to_units("1e-18") == 1


def test_round_trip_holds_for_the_largest_decimal_38_18():
    largest = Decimal("99999999999999999999.999999999999999999")
    assert from_units(to_units(largest)) == largest
    assert from_units(-to_units(largest)) == -largest


def test_to_units_refuses_what_it_cannot_hold_exactly():
    with pytest.raises(ValueError, match="more than 18 decimal places"):
        to_units("0.0000000000000000001")
    with pytest.raises(ValueError, match="not finite"):
        to_units("NaN")


def test_split_exact_golden():
    # 100 units by 1:1:1 -> 34, 33, 33; the leftover unit goes to the first key in order.
    assert split_exact(100, {"a": 1, "b": 1, "c": 1}) == {"a": 34, "b": 33, "c": 33}
    # largest remainder wins before key order: 10 * 2/7 = 2.857, 10 * 5/7 = 7.142
    assert split_exact(10, {"a": 2, "b": 5}) == {"a": 3, "b": 7}
    # a credit is split like a charge and negated
    assert split_exact(-100, {"a": 1, "b": 1, "c": 1}) == {"a": -34, "b": -33, "c": -33}
    assert split_exact(7, {"a": 0, "b": 3}) == {"a": 0, "b": 7}


def test_split_exact_rejects_bad_weights():
    with pytest.raises(ValueError, match="positive total"):
        split_exact(5, {"a": 0})
    with pytest.raises(ValueError, match="negative weight"):
        split_exact(5, {"a": -1, "b": 2})
    with pytest.raises(ValueError, match="at least one"):
        split_exact(5, {})


@given(amounts, weight_maps)
def test_split_exact_conserves_the_amount(amount, weights):
    assert sum(split_exact(amount, weights).values()) == amount


@given(amounts, weight_maps)
def test_split_exact_never_flips_sign_and_is_within_one_unit(amount, weights):
    total = sum(weights.values())
    for key, share in split_exact(amount, weights).items():
        assert share * amount >= 0
        if weights[key] == 0:
            assert share == 0
        exact_times_total = amount * weights[key]
        assert abs(share * total - exact_times_total) < total


@given(amounts, weight_maps, st.randoms())
def test_split_exact_is_permutation_invariant(amount, weights, rnd):
    items = list(weights.items())
    rnd.shuffle(items)
    assert split_exact(amount, dict(items)) == split_exact(amount, weights)


def test_round_to_cents_golden():
    # three thirds of a dollar: 0.333.. each -> 0.34, 0.33, 0.33 adds up to 1.00
    third = UNIT // 3
    amounts = {"a": third, "b": third, "c": UNIT - 2 * third}
    assert round_to_cents(amounts) == {"a": 33, "b": 33, "c": 34}
    assert round_half_away_to_cents(to_units("0.005")) == 1
    assert round_half_away_to_cents(to_units("-0.005")) == -1
    assert round_half_away_to_cents(to_units("0.0049999")) == 0


@given(st.dictionaries(st.text(max_size=4), amounts, min_size=1, max_size=40))
def test_round_to_cents_adds_up_to_the_rounded_total(amounts):
    rounded = round_to_cents(amounts)
    assert sum(rounded.values()) == round_half_away_to_cents(sum(amounts.values()))
    cent = UNIT // 100
    for key, cents in rounded.items():
        assert abs(cents * cent - amounts[key]) < cent


def test_round_to_cents_to_a_target_cycles_and_takes_back():
    """The statements' breakdowns are rounded to the mart's cents, which may differ from their own
    rounded total by more cents than there are amounts."""

    def units(*values):
        return [to_units(v) for v in values]

    p, q = units("1.005", "1.001")
    # 3 cents above the floors with 2 amounts: cycles, largest fraction first
    assert round_to_cents({"p": p, "q": q}, 203) == {"p": 102, "q": 101}
    # cents in excess are taken back from the smallest fractions
    p, q = units("1.009", "1.001")
    assert round_to_cents({"p": p, "q": q}, 199) == {"p": 100, "q": 99}
    # a credit: floors go down, the missing cent goes to the largest fraction
    x, y = units("10.004", "-2.504")
    assert round_to_cents({"x": x, "y": y}, 750) == {"x": 1000, "y": -250}
    assert round_to_cents({}, 0) == {}
    with pytest.raises(ValueError, match="over no amounts"):
        round_to_cents({}, 1)


@given(
    st.dictionaries(st.text(max_size=3), amounts, min_size=1, max_size=8),
    st.integers(min_value=-20, max_value=20),
)
def test_round_to_cents_always_reaches_its_target(amounts, shift):
    target = round_half_away_to_cents(sum(amounts.values())) + shift
    rounded = round_to_cents(amounts, target)
    assert sum(rounded.values()) == target
    assert set(rounded) == set(amounts)
    cent = UNIT // 100
    # no amount moves more than ceil(|shift| / n) + 1 cents from its exact value
    reach = -(-abs(shift) // len(amounts)) + 1
    for key, value in rounded.items():
        assert abs(value * cent - amounts[key]) <= reach * cent
