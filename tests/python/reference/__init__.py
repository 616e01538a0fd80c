"""The reference row core: the allocation over plain rows (``Decimal`` money, Python integers),
kept only under tests as what the property tests compare the production core (:mod:`gpucost.core`)
against. Not imported by the package."""
