-- A dated org mapping gives each project one team at a time: the pairs of periods of one project that overlap
-- (valid_to exclusive; an open start or end reaches as far as it can). Returns both rows of each pair.
{{ config(severity='error') }}

with

periods as (

    select * from {{ ref('base_reference__org_mapping_rows') }}

),

final as (

    select
        periods.project_id,
        periods.team_id,
        periods.valid_from,
        periods.valid_to,
        other.team_id as other_team_id,
        other.valid_from as other_valid_from,
        other.valid_to as other_valid_to,
        periods.source_file
    from periods
    inner join periods as other
        on
        periods.project_id = other.project_id
        and periods.valid_from is distinct from other.valid_from
        and coalesce(other.valid_from, date '0001-01-01') < coalesce(periods.valid_to, date '9999-12-31')
        and coalesce(periods.valid_from, date '0001-01-01') < coalesce(other.valid_to, date '9999-12-31')

)

select * from final
