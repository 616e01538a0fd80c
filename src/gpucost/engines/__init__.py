"""Engines: moving rows between the core and DuckDB, Arrow, PySpark; the dbt-duckdb plugin."""
