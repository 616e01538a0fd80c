"""Exact money: integer units of 1e-18 and the one cent rounding rule in Python.

Every amount that moves through the warehouse is a ``DECIMAL(38, 18)`` in SQL and an
``int`` of 1e-18 units here. Converting between the two is exact in both directions
for any value DuckDB can hold in that type; nothing is ever a float.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from decimal import Context, Decimal
from typing import TypeVar

MONEY_SCALE = 18
"""Decimal places of every money column (``DECIMAL(38, 18)``)."""

UNIT = 10**MONEY_SCALE
"""How many integer units make one currency unit (also 'ratio 1.0' in ratio units)."""

_QUANTUM = Decimal(1).scaleb(-MONEY_SCALE)
# DECIMAL(38, 18) needs 38 significant digits; Python's default context keeps 28.
_CONTEXT = Context(prec=80)

K = TypeVar("K", bound=Hashable)


def to_units(amount: Decimal | int | str) -> int:
    """Turn a decimal amount into integer 1e-18 units.

    Raises ``ValueError`` when the amount has more than 18 decimal places (it would not
    be exact) or is not finite.
    """
    value = Decimal(amount)
    if not value.is_finite():
        raise ValueError(f"money amount is not finite: {amount!r}")
    scaled = value.scaleb(MONEY_SCALE, context=_CONTEXT)
    if scaled != scaled.to_integral_value():
        raise ValueError(f"money amount has more than {MONEY_SCALE} decimal places: {amount!r}")
    return int(scaled)


def from_units(units: int) -> Decimal:
    """Turn integer 1e-18 units back into a ``Decimal`` with exactly 18 places."""
    return (
        Decimal(units).scaleb(-MONEY_SCALE, context=_CONTEXT).quantize(_QUANTUM, context=_CONTEXT)
    )


def round_to_cents(amounts: Mapping[K, int], target_cents: int | None = None) -> dict[K, int]:
    """Round exact unit amounts to whole cents so that they add up to ``target_cents``: the one
    largest-remainder cent rounding in Python (in SQL: ``largest_remainder_cents``,
    macros/rounding.sql; the statements apportion their breakdowns with this).

    ``target_cents`` defaults to the total rounded half away from zero to cents (the bill's cent
    total). Every amount is floored to cents, then the missing cents go one each to the amounts with
    the largest dropped fractions (ties by ``repr`` of the key), cycling if more cents are missing
    than there are amounts; cents in excess are taken back from the smallest fractions the same
    way. The result sums exactly to the target; with the default target no amount moves by a cent
    or more from its exact value.
    """
    if not amounts:
        if target_cents:
            raise ValueError(f"cannot round {target_cents} cents over no amounts")
        return {}
    cent = UNIT // 100
    if target_cents is None:
        target_cents = round_half_away_to_cents(sum(amounts.values()))
    floors = {key: value // cent for key, value in amounts.items()}
    left = target_cents - sum(floors.values())
    order = sorted(amounts, key=lambda key: (-(amounts[key] % cent), repr(key)))
    if left < 0:
        order.reverse()
    step = 1 if left >= 0 else -1
    for index in range(abs(left)):
        floors[order[index % len(order)]] += step
    return floors


def round_half_away_to_cents(units: int) -> int:
    """Whole cents nearest to an amount in units, halves away from zero (SQL ``round(x, 2)``)."""
    cent = UNIT // 100
    quotient, remainder = divmod(abs(units), cent)
    if 2 * remainder >= cent:
        quotient += 1
    return -quotient if units < 0 else quotient
