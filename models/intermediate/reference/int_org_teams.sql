-- The org mapping's teams, one row per team with its name (the first by name when projects disagree).
with

org_projects as (

    select * from {{ ref('int_org_projects') }}

),

final as (

    select
        team_id,
        min(team_name) as team_name
    from org_projects
    group by 1

)

select * from final
