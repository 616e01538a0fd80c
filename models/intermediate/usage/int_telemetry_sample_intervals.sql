-- The time each telemetry sample stands for, computed once for every series the usage models read (macro
-- sample_intervals: the gap to the series' next sample, or the series' step when that gap is missing or longer
-- than gpucost_max_sample_gap_seconds):
--   gpu_slot         a GPU slot's sample times (gpu_slot_id, and the cluster, node, GPU and MIG instance it stands
--                    for; its tenants share each), read by int_gpu_usage_hourly and int_gpu_telemetry_gaps;
--   gpu_request      a pod container's requests of one GPU resource, on a node; its step also counts the samples
--                    taken before the pod had a node. Read by int_gpu_usage_hourly;
--   compute_request  a pod container's positive CPU or memory requests, on a node; read by
--                    int_node_compute_usage_hourly.
-- Each series' gaps and step come from all of its samples, so a reader that keeps only the samples after its own
-- incremental cutoff gets what a full build gives it.
-- Incremental (macros/sample_intervals_incremental.sql): a run recomputes only what the telemetry files loaded
-- since change: the GPU slots and the CPU / memory requests from the first new sample time on (each series' row
-- before it gets its new gap, and a shorter step reaches every row of its series), and every GPU request series
-- of a workload with new request samples; everything when a landed file was removed. `dbt build --full-refresh`
-- recomputes everything.
{#- spark target: a table rebuilt each run (delete and update are DuckDB's here). -#}
{{ config(
    materialized='incremental' if target.type != 'spark' else 'table',
    incremental_strategy='append',
    on_schema_change='append_new_columns',
    pre_hook="{{ delete_sample_intervals_to_recompute() }}",
    post_hook=[
        "{{ update_sample_interval_boundaries('gpu_slot') }}",
        "{{ update_sample_interval_boundaries('compute_request') }}",
    ],
) }}

{%- set plan = sample_intervals_plan() %}
{%- set window = not plan.full %}
{%- set loaded_through = telemetry_loaded_through() %}

with

gpu_slot_samples as (

    -- the slot's cluster, node, GPU and instance come along (one each per gpu_slot_id: the same rows)
    select distinct
        gpu_slot_id,
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_instance_id,
        sampled_epoch
    -- stg_dcgm__gpu_samples from the plan's cutoff on, without unnesting the series that end before it
    -- depends_on: {{ ref('stg_dcgm__gpu_samples') }}
    from ({{ dcgm_gpu_samples(ref('base_dcgm__series'), plan.cutoffs.get('gpu_slot') if not plan.full else none) }})
        as samples
    where {{ samples_recomputed(plan, 'gpu_slot', 'sampled_epoch') }}

),

gpu_request_samples as (

    select * from {{ ref('stg_kube__pod_gpu_requests') }}
    where workload_id is not null and {{ request_workloads_recomputed(plan, 'workload_id') }}

),

gpu_requests_on_nodes as (

    select * from gpu_request_samples
    where node_name is not null

),

compute_requests_on_nodes as (

    select
        cluster_id,
        node_name,
        workload_id,
        container,
        resource_part as resource,
        requested_amount,
        sampled_epoch
    from {{ ref('stg_kube__pod_compute_requests') }}
    where
        workload_id is not null and node_name is not null and requested_amount > 0
        and {{ samples_recomputed(plan, 'compute_request', 'sampled_epoch') }}

),

slot_window as (

    {{ sample_intervals('gpu_slot_samples', ['gpu_slot_id']) }}

),

compute_window as (

    {{ sample_intervals('compute_requests_on_nodes', ['workload_id', 'container', 'resource']) }}

),

gpu_slot_intervals as (

    {{ windowed_intervals(
        'slot_window', 'gpu_slot', ['gpu_slot_id'],
        ['cluster_id', 'node_name', 'gpu_uuid', 'gpu_instance_id', 'sampled_epoch'], window
    ) }}

),

compute_request_intervals as (

    {{ windowed_intervals(
        'compute_window', 'compute_request', ['workload_id', 'container', 'resource'],
        ['cluster_id', 'node_name', 'requested_amount', 'sampled_epoch'], window
    ) }}

),

gpu_request_intervals as (

    {{ sample_intervals('gpu_requests_on_nodes', ['workload_id', 'container', 'gpu_resource'], 'gpu_request_samples') }}

),

final as (

    select
        'gpu_slot' as series_kind,
        gpu_slot_id,
        cluster_id,
        node_name,
        gpu_uuid,
        cast(gpu_instance_id as string) as gpu_instance_id,
        cast(null as string) as workload_id,
        cast(null as string) as container,
        cast(null as string) as resource,
        cast(null as string) as mig_profile,
        cast(null as double) as requested_amount,
        sampled_epoch,
        gap_seconds,
        step_seconds,
        duration_seconds,
        {{ loaded_through }} as inputs_loaded_at
    from gpu_slot_intervals
    union all
    select
        'gpu_request' as series_kind,
        null as gpu_slot_id,
        cluster_id,
        node_name,
        null as gpu_uuid,
        null as gpu_instance_id,
        workload_id,
        container,
        gpu_resource as resource,
        mig_profile,
        requested_gpus as requested_amount,
        sampled_epoch,
        gap_seconds,
        step_seconds,
        duration_seconds,
        {{ loaded_through }} as inputs_loaded_at
    from gpu_request_intervals
    union all
    select
        'compute_request' as series_kind,
        null as gpu_slot_id,
        cluster_id,
        node_name,
        null as gpu_uuid,
        null as gpu_instance_id,
        workload_id,
        container,
        resource,
        null as mig_profile,
        requested_amount,
        sampled_epoch,
        gap_seconds,
        step_seconds,
        duration_seconds,
        {{ loaded_through }} as inputs_loaded_at
    from compute_request_intervals

)

select * from final
