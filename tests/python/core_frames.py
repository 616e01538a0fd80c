"""Rows in and out of the production core (gpucost.core) for tests: a pyarrow table of rows with
each amount as the core's whole / frac pair, an engine frame of it, and the core's result back as
rows with ``Decimal`` money, to compare exactly with the reference row core (tests/python/reference).
"""

from __future__ import annotations

from decimal import Decimal

import narwhals as nw
import pyarrow as pa

from gpucost.core.split import MONEY, money_columns, money_value

D = Decimal
SCOPE_SCHEMA = {"charge_id": pa.string(), "scope_rank": pa.int64(), "scope_key": pa.string()}


def table(rows: list[dict], schema: dict[str, pa.DataType], money: tuple[str, ...] = ()):
    """A pyarrow table of ``rows``: ``schema``'s columns, then each money column as its whole /
    frac pair (a null amount as two nulls)."""
    columns: dict[str, list] = {name: [row.get(name) for row in rows] for name in schema}
    fields = list(schema.items())
    for name in money:
        pairs = [(None, None) if row[name] is None else money_columns(row[name]) for row in rows]
        columns[f"{name}_whole"] = [whole for whole, _ in pairs]
        columns[f"{name}_frac"] = [frac for _, frac in pairs]
        fields += [(f"{name}_whole", pa.int64()), (f"{name}_frac", pa.int64())]
    return pa.table(columns, schema=pa.schema(fields))


def collect(frame: nw.LazyFrame, money: tuple[str, ...] = MONEY) -> list[dict]:
    """A core result's rows, each amount back as an exact ``Decimal``."""
    out = []
    for row in frame.collect(backend="pyarrow").to_native().to_pylist():
        for name in money:
            row[name] = money_value(row.pop(f"{name}_whole"), row.pop(f"{name}_frac"))
        out.append(row)
    return out


def rows(records, fields) -> list[dict]:
    """``fields`` of each record, in a canonical order (to compare row sets exactly)."""
    return sorted(
        ({f: r.get(f) for f in fields} for r in records), key=lambda r: repr(list(r.values()))
    )


def scope_rows(lines: list[dict], key: str = "scope_keys") -> list[dict]:
    """The long frame of a list column: (charge_id, scope_rank, scope_key), rank 1 first."""
    return [
        {"charge_id": line["charge_id"], "scope_rank": rank, "scope_key": scope}
        for line in lines
        for rank, scope in enumerate(line[key] or (), start=1)
    ]
