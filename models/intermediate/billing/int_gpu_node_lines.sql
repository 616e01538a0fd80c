-- GPU node bill lines with the GPU time the node offered during the line's charge period, and how the line's
-- GPU part is shared: the node's pool (seed allocation_pools) names the basis and task-complexity weighting.
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

gpu_nodes as (

    select * from {{ ref('int_gpu_nodes') }}

),

pools as (

    select * from {{ ref('stg_reference__allocation_pools') }}

),

pool_matches as (

    -- the node's pool: the first (lowest priority) whose patterns all match; none -> the project default
    select
        lines.charge_id,
        {{ arg_min_of('pools.pool_id', 'pools.priority') }} as pool_id,
        {{ arg_min_of('pools.gpu_allocation_basis', 'pools.priority') }} as gpu_allocation_basis,
        {{ arg_min_of('pools.complexity_weighting', 'pools.priority') }} as complexity_weighting
    from lines
    left join gpu_nodes on lines.node_id = gpu_nodes.node_id
    inner join pools
        on {{ regexp_search() }}(lines.cluster_id, coalesce(nullif(pools.cluster_pattern, ''), '.*'))
        and {{ regexp_search() }}(lines.node_name, coalesce(nullif(pools.node_pattern, ''), '.*'))
        and {{ regexp_search() }}(
            coalesce(gpu_nodes.gpu_model, ''), coalesce(nullif(pools.gpu_model_pattern, ''), '.*')
        )
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
        coalesce(capacity.gpu_count, 0) as gpu_count,
        pool_matches.pool_id,
        coalesce(pool_matches.gpu_allocation_basis, '{{ var("gpucost_allocation_basis") }}') as gpu_allocation_basis,
        coalesce(pool_matches.complexity_weighting, false) as complexity_weighting
    from lines
    left join capacity on lines.charge_id = capacity.charge_id
    left join pool_matches on lines.charge_id = pool_matches.charge_id

)

select * from final
