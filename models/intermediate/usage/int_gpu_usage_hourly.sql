-- GPU-milliseconds per cluster, node, hour and workload: what DCGM saw (allocated, busy) and what
-- kube-state-metrics says the pod requested (or Slurm says the job held). The row with a null workload_id is
-- the node's unassigned GPU time.
-- A GPU slot is a GPU, or one MIG instance of it: its time counts at the instance's share of the GPU
-- (gpu_share, e.g. 1/7 for 1g.10gb). Several tenants on one slot at the same time (time-sliced or MPS
-- replicas, each with its own series; Slurm jobs sharing a node without an hpc_job label) split that slot's
-- time evenly (Slurm: by GPUs held) or, under var gpucost_shared_gpu_split: used, by measured busy share.
-- Samples without a pod are matched to the Slurm allocation on the node at that time (by the exporter's
-- hpc_job label when present).
-- Each sample stands for the time until the series' next sample, at most the series' own step when a gap
-- is longer than gpucost_max_sample_gap_seconds (telemetry missing is not usage): int_telemetry_sample_intervals.
-- Incremental (by hour): a run deletes and recomputes every hour from the earliest of
--   - the latest hour built minus var gpucost_lookback_hours (72: late rows within three days),
--   - the first sample of any DCGM or kube file loaded since the table's rows were computed (a late or
--     re-delivered file older than the lookback; base_dcgm__series / base_kube__series load file by file, and
--     each row keeps the newest loaded_at they held when it was computed: inputs_loaded_at), minus
--     gpucost_max_sample_gap_seconds (the sample before it may now end earlier),
--   - for a pod seen in a kube_pod_info file loaded since, the end of what was known of it before (its
--     incarnation's life grew, so samples after that may now match it),
-- so it equals a full build; `dbt build --full-refresh` recomputes everything.
-- The hours from the cutoff on are built a chunk of hours at a time (macros/usage_incremental.sql,
-- usage_hour_chunks: at most var gpucost_usage_samples_per_chunk DCGM samples each, so a large month stays
-- within memory): this model's SQL is the first chunk's (macros/gpu_usage_hours.sql), and the post-hook
-- inserts the others, planned by the pre-hook before the table changes. One chunk on Spark.
-- depends_on: {{ ref('base_dcgm__series') }}
-- depends_on: {{ ref('base_kube__series') }}
{#- spark target: a table rebuilt each run (delete+insert is DuckDB's; merge needs Delta). -#}
{{ config(
    materialized='incremental' if target.type != 'spark' else 'table',
    unique_key='usage_hour_key',
    incremental_strategy='delete+insert',
    on_schema_change='append_new_columns',
    pre_hook=["{{ write_later_usage_chunks() }}", "{{ delete_usage_hours_to_recompute() }}"],
    post_hook="{{ insert_later_usage_chunks() }}",
) }}

{%- set first_chunk = usage_hour_chunks()[0] %}
{{ gpu_usage_hours(first_chunk[0], first_chunk[1]) }}
