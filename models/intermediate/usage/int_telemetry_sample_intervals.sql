-- The time each telemetry sample stands for, computed once for every series the usage models read (macro
-- sample_intervals: the gap to the series' next sample, or the series' step when that gap is missing or longer
-- than gpucost_max_sample_gap_seconds):
--   gpu_slot         a GPU slot's sample times (gpu_slot_id, and the cluster, node, GPU and MIG instance it stands
--                    for; its tenants share each), read by int_gpu_usage_hourly and int_gpu_telemetry_gaps;
--   gpu_request      a pod container's requests of one GPU resource, on a node; its step also counts the samples
--                    taken before the pod had a node. Read by int_gpu_usage_hourly;
--   compute_request  a pod container's positive CPU or memory requests, on a node; read by
--                    int_node_compute_usage_hourly.
-- A table over every staged sample, rebuilt each run: a reader that keeps only the samples after its incremental
-- cutoff still gets each series' gaps and step from all of its samples, so an incremental run equals a full one.

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
    from {{ ref('stg_dcgm__gpu_samples') }}

),

gpu_request_samples as (

    select * from {{ ref('stg_kube__pod_gpu_requests') }}
    where workload_id is not null

),

gpu_requests_on_nodes as (

    select * from gpu_request_samples
    where node_name is not null

),

compute_requests_on_nodes as (

    select * from {{ ref('stg_kube__pod_compute_requests') }}
    where workload_id is not null and node_name is not null and requested_amount > 0

),

gpu_slot_intervals as (

    {{ sample_intervals('gpu_slot_samples', ['gpu_slot_id']) }}

),

gpu_request_intervals as (

    {{ sample_intervals('gpu_requests_on_nodes', ['workload_id', 'container', 'gpu_resource'], 'gpu_request_samples') }}

),

compute_request_intervals as (

    {{ sample_intervals('compute_requests_on_nodes', ['workload_id', 'container', 'resource_part']) }}

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
        duration_seconds
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
        duration_seconds
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
        resource_part as resource,
        null as mig_profile,
        requested_amount,
        sampled_epoch,
        gap_seconds,
        duration_seconds
    from compute_request_intervals

)

select * from final
