-- How each GPU node bill line splits into GPU, CPU and memory parts: the weight of each part (list price per
-- unit-hour x the node's units, in micro-units of price per hour; seed node_resource_list_prices) and what the
-- node offered of it in the line's period (GPU-ms observed; core-ms and MiB-ms for the same node time).
-- A node without CPU / memory capacity (kube_node_status_capacity), a line without GPU telemetry in its period
-- (unallocated as no_gpu_telemetry), or var gpucost_node_cost_split: gpu_only keep the whole line on the GPU part.
with

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

node_capacity as (

    select * from {{ ref('stg_kube__node_capacity') }}

),

gpu_nodes as (

    select * from {{ ref('int_gpu_nodes') }}

),

prices as (

    select * from {{ ref('node_resource_list_prices') }}

),

classified as (

    select * from {{ ref('int_bill_lines_classified') }}

),

nodes as (

    select
        lines.charge_id,
        classified.cost_component,
        lines.capacity_gpu_ms,
        coalesce(nullif(node_capacity.gpu_capacity, 0), gpu_nodes.gpu_count) as node_gpus,
        gpu_nodes.gpu_model,
        node_capacity.cpu_cores,
        node_capacity.memory_bytes
    from lines
    inner join classified on lines.charge_id = classified.charge_id
    left join node_capacity on lines.node_id = node_capacity.node_id
    left join gpu_nodes on lines.node_id = gpu_nodes.node_id

),

priced as (

    select
        nodes.*,
        coalesce(gpu_model_price.list_price_per_hour, gpu_fallback_price.list_price_per_hour) as gpu_price,
        cpu_price.list_price_per_hour as cpu_price,
        memory_price.list_price_per_hour as memory_price
    from nodes
    left join prices as gpu_model_price
        on gpu_model_price.resource_part = 'gpu' and nodes.gpu_model = gpu_model_price.gpu_model
    left join prices as gpu_fallback_price
        on gpu_fallback_price.resource_part = 'gpu' and gpu_fallback_price.gpu_model = '*'
    left join prices as cpu_price
        on cpu_price.resource_part = 'cpu' and cpu_price.gpu_model = '*'
    left join prices as memory_price
        on memory_price.resource_part = 'memory' and memory_price.gpu_model = '*'

),

splittable as (

    select
        *,
        '{{ var("gpucost_node_cost_split") }}' = 'list_price'
        and node_gpus > 0 and cpu_cores > 0 and memory_bytes > 0
        -- the parts' capacities are the node's observed time: a line without telemetry stays whole
        and capacity_gpu_ms > 0
        -- only the compute a node sells is GPU, CPU and memory: its power, licences and fees stay whole
        and cost_component = 'compute_gpu' as is_split
    from priced

),

parts as (

    select
        charge_id,
        'gpu' as resource_part,
        cast(round(coalesce(gpu_price, 1) * 1000000 * coalesce(node_gpus, 1)) as bigint) as part_weight,
        capacity_gpu_ms as capacity_units
    from splittable
    union all
    select
        charge_id,
        'cpu' as resource_part,
        cast(round(cpu_price * 1000000 * cpu_cores) as bigint) as part_weight,
        cast(round(cast(capacity_gpu_ms as {{ wide_int_type() }}) * cpu_cores / node_gpus) as bigint) as capacity_units
    from splittable
    where is_split
    union all
    select
        charge_id,
        'memory' as resource_part,
        cast(round(memory_price * 1000000 * memory_bytes / 1073741824) as bigint) as part_weight,
        cast(round(cast(capacity_gpu_ms as {{ wide_int_type() }}) * (memory_bytes / 1048576) / node_gpus) as bigint)
            as capacity_units
    from splittable
    where is_split

),

final as (

    select * from parts

)

select * from final
