-- One row per GPU node seen in DCGM telemetry: its GPU model (the one with the most valid samples) and how
-- many GPUs it has.
with

gpus as (

    select * from {{ ref('stg_dcgm__gpus') }}

),

node_models as (

    select
        cluster_id,
        node_name,
        gpu_model,
        sum(sample_count) as sample_count
    from gpus
    group by 1, 2, 3

),

node_gpu_models as (

    select
        cluster_id,
        node_name,
        {{ arg_max_of('gpu_model', 'sample_count') }} filter (where gpu_model is not null) as gpu_model
    from node_models
    group by 1, 2

),

node_gpu_counts as (

    select
        cluster_id,
        node_name,
        count(distinct gpu_uuid) as gpu_count
    from gpus
    group by 1, 2

),

final as (

    select
        node_gpu_counts.cluster_id || '/' || node_gpu_counts.node_name as node_id,
        node_gpu_counts.cluster_id,
        node_gpu_counts.node_name,
        node_gpu_models.gpu_model,
        node_gpu_counts.gpu_count
    from node_gpu_counts
    inner join node_gpu_models
        on node_gpu_counts.cluster_id = node_gpu_models.cluster_id
        and node_gpu_counts.node_name = node_gpu_models.node_name

)

select * from final
