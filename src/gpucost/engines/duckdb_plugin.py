"""dbt-duckdb plugin (profiles.yml ``plugins: [{module: gpucost.engines.duckdb_plugin}]``):
registers the Python functions the telemetry readers call in SQL (``macros/landing.sql``).

- ``gpucost_prometheus_text(content VARCHAR, filename VARCHAR, modified_epoch DOUBLE) ->
VARCHAR``: an
  exposition-text or OpenMetrics file as a query_range response in JSON (gpucost.engines.prom_text);
- ``gpucost_gunzip(content BLOB) -> VARCHAR``: a gzip file's text, null when unreadable;
- ``gpucost_outside_landing(path VARCHAR, landing_dir VARCHAR) -> BOOLEAN``: the landed path is a
  symlink (or under one) whose target is outside the landing zone
  (gpucost.validation.landing_links).

``GPUCOST_DUCKDB_THREADS`` (a whole number; unset by default: DuckDB's own, a thread per core) caps
the threads DuckDB runs each query on; the tests set 1, as two pytest workers share two cores.

It also imports Polars, the allocation core's engine under dbt-duckdb (gpucost.engines.lazy_io),
once on the main thread: dbt runs Python models on several threads, and scikit-learn reads
``sys.modules["polars"]``, so a first import on one thread raced the attribution model on another
("partially initialized module 'polars'").
"""

from __future__ import annotations

import os

import polars  # noqa: F401 (imported once, on the main thread: see above)
from dbt.adapters.duckdb.plugins import BasePlugin
from duckdb import DuckDBPyConnection
from duckdb.sqltypes import BLOB, BOOLEAN, DOUBLE, VARCHAR

from gpucost.engines.prom_text import gunzip_text, prometheus_text_response
from gpucost.validation.landing_links import is_outside_landing


def duckdb_threads(value: str | None) -> int | None:
    """GPUCOST_DUCKDB_THREADS as a number of threads, None when unset; a clear error otherwise."""
    if value is None or not value.strip():
        return None
    if not value.strip().isdigit() or int(value) < 1:
        message = f"GPUCOST_DUCKDB_THREADS must be a whole number of at least 1, not {value!r}"
        raise ValueError(message)
    return int(value)


def cap_threads(conn: DuckDBPyConnection) -> None:
    """Run the connection's queries on GPUCOST_DUCKDB_THREADS threads, when it is set."""
    threads = duckdb_threads(os.environ.get("GPUCOST_DUCKDB_THREADS"))
    if threads is not None:
        conn.execute(f"set threads = {threads}")


class Plugin(BasePlugin):
    def configure_connection(self, conn: DuckDBPyConnection) -> None:
        cap_threads(conn)
        conn.create_function(
            "gpucost_prometheus_text",
            prometheus_text_response,
            [VARCHAR, VARCHAR, DOUBLE],
            VARCHAR,
            null_handling="special",
            side_effects=False,
        )
        conn.create_function(
            "gpucost_gunzip",
            gunzip_text,
            [BLOB],
            VARCHAR,
            null_handling="special",
            side_effects=False,
        )
        conn.create_function(
            "gpucost_outside_landing",
            is_outside_landing,
            [VARCHAR, VARCHAR],
            BOOLEAN,
            null_handling="special",
            side_effects=False,
        )
