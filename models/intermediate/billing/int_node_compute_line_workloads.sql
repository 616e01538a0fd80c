-- For each GPU node bill line, the CPU (core-ms) and memory (MiB-ms) every workload requested on that node
-- within the line's period: the basis of the line's CPU and memory parts.
with

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

usage as (

    select * from {{ ref('int_node_compute_usage_hourly') }}

),

final as (

    select
        lines.charge_id,
        usage.resource_part,
        usage.workload_id,
        cast(sum(usage.requested_units) as bigint) as requested_units
    from lines
    inner join usage
        on lines.cluster_id = usage.cluster_id
        and lines.node_name = usage.node_name
        and lines.period_start_epoch <= usage.hour_start_epoch
        and lines.period_end_epoch > usage.hour_start_epoch
    group by 1, 2, 3

)

select * from final
