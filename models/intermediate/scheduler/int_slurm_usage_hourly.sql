-- GPU time each Slurm job allocation requested per node and hour: the GPUs it holds on the node times the
-- seconds of the hour it held them. The Slurm side of kube's pod GPU requests, shaped like them.
with

allocation_nodes as (

    select * from {{ ref('int_slurm_allocation_nodes') }}
    where gpus_on_node > 0

),

bounds as (

    select
        *,
        {{ epoch_seconds('started_at') }} as start_epoch,
        {{ epoch_seconds('held_until_at') }} as end_epoch
    from allocation_nodes

),

hours as (

    select
        bounds.*,
        {{ unnest_as(int_range(epoch_hour_floor('bounds.start_epoch'), 'bounds.end_epoch', 3600), 'hour_start_epoch') }}
    from bounds
    where bounds.end_epoch > bounds.start_epoch

),

final as (

    select
        cluster_id,
        node_name,
        hour_start_epoch,
        workload_id,
        allocation_id,
        cast(round(
            gpus_on_node * 1000
            * (least(end_epoch, hour_start_epoch + 3600) - greatest(start_epoch, hour_start_epoch))
        ) as bigint) as requested_gpu_ms
    from hours

)

select * from final
