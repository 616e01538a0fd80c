"""Symbolic links in the landing zone: which ones point outside it.

A landed file must be in the landing zone. A symlink whose target resolves outside it
(``/etc/passwd`` linked in as ``bill.csv``) is refused by the build: listed here, then quarantined
with a reason by stg_landing__bill_files and never read, so no message can show its target.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("is_target_outside", pa.bool_()),
        ("is_target_missing", pa.bool_()),
    ]
)


ENV_VAR = re.compile(
    r"""^\{\{\s*env_var\(\s*['"]([^'"]+)['"]\s*(?:,\s*['"]([^'"]*)['"]\s*)?\)\s*\}\}$"""
)


def resolve_landing_dir(value: str) -> str:
    """The landing dir from the var gpucost_landing_dir as a Python model's config receives it:
    a path, or (unrendered) the project default
    ``{{ env_var('GPUCOST_LANDING_DIR', 'landing') }}``."""
    match = ENV_VAR.match(value.strip())
    if match:
        return os.environ.get(match.group(1), match.group(2) or "")
    return value


def landing_links(landing_dir: str) -> list[tuple[str, bool, bool]]:
    """Every symlink under ``landing_dir`` (as ``<landing_dir>/<relative path>``, the spelling
    DuckDB's glob gives), whether its target resolves outside the landing zone and whether it is
    missing. Symlinked folders are not descended into (os.walk does not follow them): only their
    own link is listed."""
    root = Path(landing_dir)
    if not root.is_dir():
        return []
    links = []
    for folder, folders, files in os.walk(root):
        for name in sorted(files + [f for f in folders if Path(folder, f).is_symlink()]):
            path = Path(folder, name)
            if not path.is_symlink():
                continue
            outside = is_outside_landing(str(path), landing_dir)
            links.append((os.path.join(folder, name), outside, not path.resolve().exists()))
    return sorted(links)


def is_outside_landing(path: str | None, landing_dir: str | None) -> bool | None:
    """True when ``path`` resolves (through a symlink of its own or of a folder above it) to a
    target outside ``landing_dir``: the build does not read it. The DuckDB function
    ``gpucost_outside_landing`` (gpucost.engines.duckdb_plugin) that ``landing_files`` filters
    with."""
    if path is None or landing_dir is None:
        return None
    root = Path(landing_dir).resolve()
    target = Path(path).resolve()
    return target != root and root not in target.parents


def links_table(landing_dir: str) -> pa.Table:
    rows = landing_links(resolve_landing_dir(landing_dir))
    return pa.table(
        [list(column) for column in zip(*rows, strict=True)] if rows else [[], [], []],
        schema=SCHEMA,
    )
