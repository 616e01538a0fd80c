"""safe_output.first_line: the one way an error becomes one printable line (CLI, alerts, the
validation suites, the landing probes)."""

from __future__ import annotations

from gpucost.commands.safe_output import first_line


def test_first_line_keeps_the_first_line_and_cuts_quoted_input():
    error = ValueError(
        '  Invalid Input Error: CSV Error on Line: 3\nOriginal Line: 1,"secret",2\nmore'
    )
    assert first_line(error) == "Invalid Input Error: CSV Error on Line: 3"
    cut = first_line(RuntimeError("Conversion Error: bad value. Line content: alice,42"))
    assert cut == "Conversion Error: bad value."


def test_first_line_hides_paths_and_quoted_text_on_request():
    error = OSError('IO Error: cannot open "/land/billing/a [1].csv": "x,y" at /land/billing/a')
    hidden = first_line(error, hide=("/land/billing/a [1].csv", "/land/billing/a"))
    assert "/land" not in hidden and hidden.count("<file>") == 2
    assert (
        first_line(error, hide_quoted=True) == 'IO Error: cannot open "…": "…" at /land/billing/a'
    )


def test_first_line_of_nothing_is_empty_and_long_lines_are_cut():
    assert first_line(ValueError()) == ""
    assert first_line("   \n\n") == ""
    assert first_line("x" * 500) == "x" * 300
    assert first_line("x" * 500, limit=10) == "x" * 10
