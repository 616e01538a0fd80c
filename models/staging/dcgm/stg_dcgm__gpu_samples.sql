-- One row per GPU, pod and scrape time, with the DCGM fields side by side (duplicate scrapes collapse); from
-- hourly aggregates, one row per GPU, pod and hour with the fields' hourly means and covered_seconds.
-- The series are grouped by their labels first (a few rows per GPU and file), so the per-sample pivot
-- groups by a number and a time instead of twelve label columns.
-- The rows are macros/dcgm_gpu_samples.sql's, which its readers also call with a time to start from.
{{ dcgm_gpu_samples(ref('base_dcgm__series')) }}
