"""The allocation core: one implementation, as narwhals plans that run where the data is (a DuckDB
relation inside ``dbt build``, a PySpark DataFrame on Databricks), never rows in Python.

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
"""
