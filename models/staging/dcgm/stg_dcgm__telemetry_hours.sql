-- The hours each cluster has valid DCGM samples in, from the series table (one short list of hours per series).
with

source as (

    select * from {{ ref('base_dcgm__series') }}
    where sample_count > 0

),

series_hours as (

    select
        cluster_id,
        -- each series' distinct hours, listed once when its file was loaded
        {{ unnest_as('sampled_hours', 'hour_epoch') }}
    from source

),

final as (

    select distinct
        cluster_id,
        hour_epoch
    from series_hours

)

select * from final
