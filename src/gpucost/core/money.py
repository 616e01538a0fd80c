"""Exact money: integer units of 1e-18 and the one rounding rule used everywhere.

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


def split_exact(amount: int, weights: Mapping[K, int]) -> dict[K, int]:
    """Split an integer amount across keys in proportion to integer weights, exactly.

    Largest-remainder (Hamilton) method: every key first gets ``floor(|amount| * w / W)``,
    then the units left over go one each to the keys with the largest remainders, ties
    broken by the key's sort order. Invariants (property-tested):

    * the returned shares sum exactly to ``amount`` (conservation);
    * a share never has the opposite sign of ``amount`` and is zero for a zero weight;
    * the result does not depend on the order of ``weights`` (permutation invariance);
    * each share differs from the exact proportional value by less than one unit.

    A negative amount (a credit) is split as its absolute value and negated, so a credit
    is shared exactly like a charge of the same size.
    """
    if not weights:
        raise ValueError("split_exact needs at least one weight")
    for key, weight in weights.items():
        if weight < 0:
            raise ValueError(f"negative weight {weight} for {key!r}")
    total = sum(weights.values())
    if total == 0:
        raise ValueError("split_exact needs a positive total weight")
    sign = -1 if amount < 0 else 1
    magnitude = abs(amount)
    shares: dict[K, int] = {}
    remainders: list[tuple[int, str, K]] = []
    for key, weight in weights.items():
        quotient, remainder = divmod(magnitude * weight, total)
        shares[key] = quotient
        if remainder:
            remainders.append((remainder, repr(key), key))
    left = magnitude - sum(shares.values())
    # Largest remainder first; equal remainders in ascending key order.
    remainders.sort(key=lambda item: (-item[0], item[1]))
    for _, _, key in remainders[:left]:
        shares[key] += 1
    return {key: sign * share for key, share in shares.items()}


def round_to_cents(amounts: Mapping[K, int], target_cents: int | None = None) -> dict[K, int]:
    """Round exact unit amounts to whole cents so that they add up to ``target_cents``.

    ``target_cents`` defaults to the total rounded half away from zero to cents (the bill's cent
    total). Every amount is floored to cents, then the missing cents go to the amounts with
    the largest dropped fractions (ties by key order). The result sums exactly to the
    target, and no amount moves by a cent or more from its exact value.
    """
    cent = UNIT // 100
    if target_cents is None:
        target_cents = round_half_away_to_cents(sum(amounts.values()))
    floors = {key: value // cent for key, value in amounts.items()}
    left = target_cents - sum(floors.values())
    if left < 0 or left > len(amounts):
        raise ValueError(f"target {target_cents} cents is not reachable from the amounts")
    order = sorted(amounts, key=lambda key: (-(amounts[key] % cent), repr(key)))
    for key in order[:left]:
        floors[key] += 1
    return floors


def round_half_away_to_cents(units: int) -> int:
    """Whole cents nearest to an amount in units, halves away from zero (SQL ``round(x, 2)``)."""
    cent = UNIT // 100
    quotient, remainder = divmod(abs(units), cent)
    if 2 * remainder >= cent:
        quotient += 1
    return -quotient if units < 0 else quotient
