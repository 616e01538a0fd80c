-- GPU node bill lines with the GPU time the node offered during the line's charge period.
with

classified as (

    select * from {{ ref('int_bill_lines_classified') }}
    where line_class = 'gpu_node'

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

usage as (

    select * from {{ ref('int_gpu_usage_hourly') }}

),

lines as (

    select
        classified.charge_id,
        classified.node_id,
        classified.cluster_id,
        classified.node_name,
        charges.billed_cost,
        charges.effective_cost,
        charges.charge_period_start_at,
        {{ epoch_seconds('charges.charge_period_start_at') }} as period_start_epoch,
        {{ epoch_seconds('charges.charge_period_end_at') }} as period_end_epoch
    from classified
    inner join charges on classified.charge_id = charges.charge_id

),

capacity as (

    select
        lines.charge_id,
        cast(sum(usage.gpu_ms) as bigint) as capacity_gpu_ms,
        max(usage.gpu_count) as gpu_count
    from lines
    inner join usage
        on lines.cluster_id = usage.cluster_id
        and lines.node_name = usage.node_name
        and lines.period_start_epoch <= usage.hour_start_epoch
        and lines.period_end_epoch > usage.hour_start_epoch
    group by 1

),

final as (

    select
        lines.charge_id,
        lines.node_id,
        lines.cluster_id,
        lines.node_name,
        cast(lines.charge_period_start_at as date) as charge_date,
        lines.period_start_epoch,
        lines.period_end_epoch,
        lines.billed_cost,
        lines.effective_cost,
        coalesce(capacity.capacity_gpu_ms, 0) as capacity_gpu_ms,
        coalesce(capacity.gpu_count, 0) as gpu_count
    from lines
    left join capacity on lines.charge_id = capacity.charge_id

)

select * from final
