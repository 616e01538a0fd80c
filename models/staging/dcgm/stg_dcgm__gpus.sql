-- One row per GPU (and model label) seen in valid DCGM samples, from the series table: how many samples
-- and when, without unnesting them.
with

source as (

    select * from {{ ref('base_dcgm__series') }}
    where sample_count > 0

),

final as (

    select
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_model,
        sum(sample_count) as sample_count,
        min(first_sampled_epoch) as first_sampled_epoch,
        max(last_sampled_epoch) as last_sampled_epoch
    from source
    group by 1, 2, 3, 4

)

select * from final
