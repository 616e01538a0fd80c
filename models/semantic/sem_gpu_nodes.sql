-- One row per GPU node (<cluster>/<node name>) with its GPU model: the `node` entity of the semantic layer,
-- so that GPU cost (fct_cost_allocation has no gpu_model column) and GPU-hours both group by GPU model.
with

gpu_nodes as (

    select * from {{ ref('int_gpu_nodes') }}

),

final as (

    select
        node_id,
        cluster_id,
        node_name,
        gpu_model,
        gpu_count
    from gpu_nodes

)

select * from final
