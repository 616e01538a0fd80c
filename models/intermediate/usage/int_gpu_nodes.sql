-- One row per GPU node seen in DCGM telemetry: its GPU model and how many GPUs it has.
with

gpu_samples as (

    select * from {{ ref('stg_dcgm__gpu_samples') }}

),

final as (

    select
        cluster_id || '/' || node_name as node_id,
        cluster_id,
        node_name,
        mode(gpu_model) as gpu_model,
        count(distinct gpu_uuid) as gpu_count
    from gpu_samples
    group by 1, 2, 3

)

select * from final
