-- The org mapping's projects (landed reference/*.csv), one row per project with its team and cost centre:
-- the declared side of dim_projects and dim_teams.
with

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

),

final as (

    select
        project_id,
        team_id,
        project_name,
        team_name,
        cost_center
    from org_mapping

)

select * from final
