-- The hours each cluster has valid DCGM samples in, from the series table (one short list per series).
with

source as (

    select * from {{ ref('base_dcgm__series') }}
    where sample_count > 0

),

series_hours as (

    select
        cluster_id,
        {{ unnest_as(
            list_unique(list_map('sampled_epochs', 'sampled_epoch', epoch_hour_floor('sampled_epoch'))),
            'hour_epoch'
        ) }}
    from source

),

final as (

    select distinct
        cluster_id,
        hour_epoch
    from series_hours

)

select * from final
