"""A numpy twin of a ``random.Random``: the same MT19937 stream, drawn in bulk.

Python's ``random.Random`` and numpy's legacy ``np.random.RandomState`` are both MT19937, and both
make a double from two 32-bit words as genrand_res53 does (``(a >> 5) * 67108864 + (b >> 6)``, over
2**53). :func:`twin` copies a ``Random``'s state into a ``RandomState``, and back when the block
ends: ``twin.random_sample(n)`` then equals ``n`` calls of ``rng.random()``, bit for bit, and
``rng`` goes on from where the twin stopped (tests/python/test_hourly_fast.py checks both).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

_KEY_WORDS = 624  # MT19937's state: 624 32-bit words and a position


def to_numpy(rng: random.Random) -> np.random.RandomState:
    """A ``RandomState`` in ``rng``'s state (``rng`` itself is left as it is)."""
    version, internal, _gauss = rng.getstate()
    if version != 3 or len(internal) != _KEY_WORDS + 1:
        raise ValueError("not an MT19937 random.Random state")
    twin = np.random.RandomState()
    twin.set_state(("MT19937", np.array(internal[:_KEY_WORDS], dtype=np.uint32), internal[-1]))
    return twin


def to_python(twin: np.random.RandomState, rng: random.Random) -> None:
    """Put ``twin``'s state back into ``rng``, keeping ``rng``'s cached Gaussian (if any)."""
    name, key, pos, *_ = twin.get_state()
    if name != "MT19937":
        raise ValueError(f"not an MT19937 state: {name}")
    rng.setstate((3, (*(int(word) for word in key), int(pos)), rng.getstate()[2]))


@contextmanager
def twin(rng: random.Random) -> Iterator[np.random.RandomState]:
    """``rng``'s numpy twin for the block; ``rng`` continues after the twin's draws."""
    mirror = to_numpy(rng)
    try:
        yield mirror
    finally:
        to_python(mirror, rng)


def words(twin: np.random.RandomState, n: int) -> np.ndarray:
    """The next ``n`` raw 32-bit words of the stream (``getrandbits(32)`` each), as uint64."""
    return twin.randint(0, 2**32, size=n, dtype=np.uint64)
