-- The organisation mapping (project -> team) from <landing>/reference/*.csv, when one is landed: one row per
-- project, its current one. A dated mapping (valid_from / valid_to) has a row per period: the current row is the
-- open one (no valid_to), else the one that ended last; int_org_project_team_periods keeps the earlier periods.
with

mapping_rows as (

    select * from {{ ref('base_reference__org_mapping_rows') }}

),

ranked as (

    select
        *,
        row_number() over (
            partition by project_id
            order by valid_to desc nulls first, valid_from desc nulls last, source_file asc, team_id asc
        ) as period_rank
    from mapping_rows

),

final as (

    select
        project_id,
        team_id,
        project_name,
        team_name,
        cost_center,
        source_file
    from ranked
    where period_rank = 1

)

select * from final
