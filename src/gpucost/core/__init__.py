"""The allocation core: one implementation, as narwhals plans on a lazy engine (Polars inside
``dbt build`` on DuckDB, a PySpark DataFrame on Databricks), never rows in Python.

Module by module, in the order a bill line goes through them:

* :mod:`gpucost.core.money`: exact money (integer 1e-18 units) and the one cent rounding
  (largest remainder, :func:`~gpucost.core.money.round_to_cents`);
* :mod:`gpucost.core.split`: the one exact split every step is built on
  (:func:`~gpucost.core.split.split_lines`: largest remainder in 1e-18 units, 64-bit safe);
* :mod:`gpucost.core.node_parts`: a GPU node's line in GPU / CPU / memory parts, and the CPU and
  memory parts prorated with their own idle;
* :mod:`gpucost.core.gpu_time`: the GPU part prorated by GPU time (requested, used, max; task
  complexity), its idle left as an idle row;
* :mod:`gpucost.core.idle`: idle paid first by reservations, then spread by the idle policy;
* :mod:`gpucost.core.shared`: shared bill lines by owners' placed cost, shared workloads by
  their consumers' weights;
* :mod:`gpucost.core.storage`: volume lines by claim-holding time;
* :mod:`gpucost.core.attribution`: the learned attribution (in memory; not an allocation step).

:mod:`gpucost.engines.lazy_io` moves frames in and out (``DECIMAL(38, 18)`` to the core's whole /
frac ``BIGINT`` pairs and back) and holds the one dispatch helper the dbt Python models call
(:func:`~gpucost.engines.lazy_io.allocate`).

Why this core and not the row core (measured 2026-11-25)
--------------------------------------------------------
Until then every allocation model had two implementations, a row core (Python ``dict`` rows,
``Decimal`` money) and this one, picked by input size (var ``gpucost_lazy_min_rows``, 1,000,000
rows), so the demo month and CI only ever ran the row core. The demo month (16 nodes x 30 days,
5-min samples) built both ways on one landing zone, 2-core machine shared with four other builds
(load average 9-12):

====================================  ===============  ===============
                                      row core         this core
====================================  ===============  ===============
``dbt build``, dbt's elapsed time     115 s / 156 s    187 s
``gpucost build`` wall time           2:25             3:33
the seven allocation models (sum)     24 s             123 s
peak RSS of the build                 2.64 GB          2.64 GB
marts and intermediate tables         equal (md5)      equal (md5)
====================================  ===============  ===============

At that size the row core is faster (about 4 s of plan building per model here, whatever the
rows) and the build's memory is the same either way (other models bound it). This core is kept
because it is the only one that runs without collecting the inputs into Python: inside DuckDB on
one machine and on a Spark cluster (dbt-databricks), where a row core would collect every input to
the driver; keeping both meant a production path that CI never ran. So it runs everywhere, CI and
the demo included, for about 30-70 s more per demo build under that load; the row core lives on
only as the reference the property tests compare this one against (tests/python/reference).

The engine under dbt-duckdb: Polars (measured 2026-11-26)
---------------------------------------------------------
The core first ran on DuckDB relations (narwhals' DuckDB backend). DuckDB's Python relation layer
binds each step of a plan as it is built, and a long division is a few hundred expressions, so a
split cost about 0.5 s of CPU on 9 rows. Since then :mod:`gpucost.engines.lazy_io` converts the
money in DuckDB SQL (exact decimals) and hands the rows to a Polars LazyFrame; results come back
through DuckDB's decimal arithmetic. The core did not change. Measured on an idle 2-core machine:

====================================  ================  ================
                                      DuckDB relations  Polars
====================================  ================  ================
one split, 3 amounts, 9 lines         0.50-0.55 s CPU   0.07-0.08 s CPU
tiny test build (1 day, 2 nodes)      32.0-32.8 s CPU   27.6 s CPU
demo month ``gpucost build``          112 s CPU, 71 s   96 s CPU, 61 s
peak RSS of the demo build            2.77 GB           2.77 GB
all 117 tables of both builds         equal (md5)       equal (md5)
====================================  ================  ================

(The two ``base_*__series`` readers differ only in their ``loaded_at``.) On Spark nothing changed:
a PySpark DataFrame stays on the cluster.
"""
