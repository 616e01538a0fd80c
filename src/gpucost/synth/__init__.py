"""Synthetic months: the generator of landing-zone files in the real tools' formats."""
