-- CPU and memory each workload held per cluster, node and hour: kube pods' requests (GPU pods and CPU-only
-- pods alike) and Slurm allocations' CPUs and memory on each node. CPU in core-milliseconds, memory in
-- MiB-milliseconds (integers: each sample's part is rounded once, then summed).
with

request_intervals as (

    -- a pod's positive CPU and memory requests on its node, each sample with its duration
    select
        *,
        resource as resource_part
    from {{ ref('int_telemetry_sample_intervals') }}
    where series_kind = 'compute_request'

),

slurm_allocation_nodes as (

    select * from {{ ref('int_slurm_allocation_nodes') }}

),

kube_hourly as (

    select
        request_intervals.cluster_id,
        request_intervals.node_name,
        {{ epoch_hour_floor('request_intervals.sampled_epoch') }} as hour_start_epoch,
        request_intervals.workload_id,
        request_intervals.resource_part,
        sum(cast(round(
            request_intervals.requested_amount
            * case when request_intervals.resource_part = 'memory' then {{ double_literal('1.0') }} / 1048576 else 1 end
            * 1000 * request_intervals.duration_seconds
        ) as bigint)) as requested_units
    from request_intervals
    group by 1, 2, 3, 4, 5

),

slurm_bounds as (

    select
        *,
        {{ epoch_seconds('started_at') }} as start_epoch,
        {{ epoch_seconds('held_until_at') }} as end_epoch
    from slurm_allocation_nodes

),

slurm_hours as (

    select
        slurm_bounds.*,
        {{ unnest_as(
            int_range(epoch_hour_floor('slurm_bounds.start_epoch'), 'slurm_bounds.end_epoch', 3600),
            'hour_start_epoch'
        ) }}
    from slurm_bounds
    where slurm_bounds.end_epoch > slurm_bounds.start_epoch

),

slurm_held as (

    select
        *,
        least(end_epoch, hour_start_epoch + 3600) - greatest(start_epoch, hour_start_epoch) as held_seconds
    from slurm_hours

),

slurm_hourly as (

    select
        cluster_id,
        node_name,
        hour_start_epoch,
        workload_id,
        'cpu' as resource_part,
        cast(sum(round(cpus_on_node * 1000 * held_seconds)) as bigint) as requested_units
    from slurm_held
    where cpus_on_node > 0
    group by 1, 2, 3, 4
    union all
    select
        cluster_id,
        node_name,
        hour_start_epoch,
        workload_id,
        'memory' as resource_part,
        cast(sum(round(memory_bytes_on_node / 1048576 * 1000 * held_seconds)) as bigint) as requested_units
    from slurm_held
    where memory_bytes_on_node > 0
    group by 1, 2, 3, 4

),

final as (

    select * from kube_hourly
    union all
    select * from slurm_hourly

)

select * from final
