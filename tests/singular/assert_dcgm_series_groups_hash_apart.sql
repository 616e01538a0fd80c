-- Two groups of DCGM series with different labels never share a series_group_id, stg_dcgm__gpu_samples' pivot key
-- (macro series_group_id: a hash, so a clash is possible in principle, and would merge the two groups' samples).
-- One row per number two label sets share.
{%- set labels = dcgm_series_group_labels() %}
with

label_sets as (

    select distinct {{ labels | join(', ') }}
    from {{ ref('base_dcgm__series') }}
    where sample_count > 0

),

numbered as (

    select {{ series_group_id(labels) }} as series_group_id
    from label_sets

),

final as (

    select
        series_group_id,
        count(*) as label_set_count
    from numbered
    group by 1
    having count(*) > 1

)

select * from final
