-- For each GPU node bill line, the GPU time of every workload on that node within the line's period.
with

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

usage as (

    select * from {{ ref('int_gpu_usage_hourly') }}
    where workload_id is not null

),

classes as (

    select * from {{ ref('int_workload_classes') }}

),

final as (

    select
        lines.charge_id,
        usage.workload_id,
        -- the task-complexity weight (used only on lines whose pool weights by complexity)
        coalesce(min(classes.complexity_weight), 1) as complexity_weight,
        cast(sum(usage.requested_gpu_ms) as bigint) as requested_gpu_ms,
        cast(sum(usage.used_gpu_ms) as bigint) as used_gpu_ms,
        cast(sum(usage.gpu_ms) as bigint) as allocated_gpu_ms
    from lines
    inner join usage
        on lines.cluster_id = usage.cluster_id
        and lines.node_name = usage.node_name
        and lines.period_start_epoch <= usage.hour_start_epoch
        and lines.period_end_epoch > usage.hour_start_epoch
    left join classes on usage.workload_id = classes.workload_id
    group by 1, 2

)

select * from final
