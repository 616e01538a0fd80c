"""Small display helpers of the showback dashboard (``dashboard/app.py``): tables and bar charts
fed with exact ``Decimal`` money, formatted by ``gpucost.commands.dashboard_data``.

Charts get amounts as decimal strings, turned into numbers only inside the browser to place the
marks; tables get formatted strings. Values reach the page as plain text (never HTML).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import altair as alt
import streamlit as st

from gpucost.commands import dashboard_data as data


def money_rows(rows: list[dict], money: tuple[str, ...]) -> list[dict]:
    """Rows for a chart or table: money as exact cent strings (``"1234.57"``) and a formatted
    ``<column>_text`` (``"1,234.57"``) for tooltips."""
    out = []
    for row in rows:
        item = {
            key: (value.isoformat() if isinstance(value, date) else value)
            for key, value in row.items()
            if key not in money
        }
        for key in money:
            item[key] = str(data.cents(row[key]))
            item[f"{key}_text"] = data.fmt_money(row[key], row.get("billing_currency"))
        out.append(item)
    return out


def table(
    rows: list[dict],
    columns: dict[str, str],
    money: tuple[str, ...] = (),
    *,
    whole: bool = False,
    widths: dict[str, str | int] | None = None,
) -> None:
    """A table with the given columns (key -> header); money formatted from Decimal. ``whole``:
    tall enough to show every row without scrolling; ``widths``: header -> small / medium /
    large or pixels, for columns that would otherwise take their longest value's width."""
    shown = [
        {
            header: (
                data.fmt_money(row[key])
                if key in money
                else (row[key].isoformat() if isinstance(row[key], date) else row[key])
            )
            for key, header in columns.items()
        }
        for row in rows
    ]
    height = 38 + 35 * len(rows) if whole else "auto"
    config = {
        header: st.column_config.Column(width=width) for header, width in (widths or {}).items()
    }
    st.dataframe(shown, hide_index=True, width="stretch", height=height, column_config=config)


def bar(
    rows: list[dict],
    category: str,
    amount: str,
    *,
    title: str,
    color: str | None = None,
    color_scale: alt.Scale | None = None,
    height: int = 260,
) -> alt.Chart:
    """Horizontal bars of an amount per category (stacked by ``color``)."""
    values = money_rows(rows, (amount,))
    tooltip = [alt.Tooltip(f"{category}:N"), alt.Tooltip(f"{amount}_text:N", title=title)]
    encoding = {
        "y": alt.Y(f"{category}:N", sort="-x", title=None, axis=alt.Axis(labelLimit=320)),
        "x": alt.X("amount_value:Q", title=title, stack="zero", axis=alt.Axis(format="~s")),
        "tooltip": tooltip,
    }
    if color:
        encoding["color"] = alt.Color(f"{color}:N", title=None, scale=color_scale or alt.Undefined)
        tooltip.insert(1, alt.Tooltip(f"{color}:N"))
    return (
        alt.Chart(alt.Data(values=values), height=height)
        .transform_calculate(amount_value=f"toNumber(datum.{amount})")
        .mark_bar()
        .encode(**encoding)
    )


def residual(value, currency: str) -> str:
    """The residual in cents, or exactly when it is not zero but rounds to 0.00."""
    if value and not data.cents(value):
        return f"{value.normalize():f} {currency}"
    return data.fmt_money(value, currency)


def signed_money(value, currency: str) -> str:
    """``+1,234.57 USD`` / ``-1,234.57 USD`` (a change), from the Decimal."""
    text = data.fmt_money(value, currency)
    return text if text.startswith("-") else f"+{text}"


def confidence(value) -> str:
    """An attribution confidence in [0, 1] to two decimals; a dash when there is none."""
    return "-" if value is None else f"{Decimal(value):.2f}"
