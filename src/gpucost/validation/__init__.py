"""Validation of landed files: Great Expectations suites, bill-file probes, symlink refusal."""
