-- Every team money can land on, with its name and how many projects it owns.
with

projects as (

    select * from {{ ref('dim_projects') }}

),

org_teams as (

    select * from {{ ref('int_org_teams') }}

),

allocations as (

    select * from {{ ref('int_cost_allocations_owned') }}

),

team_ids as (

    select team_id from projects
    union
    select team_id from allocations

),

project_counts as (

    select
        team_id,
        count(case when not is_system_owner then 1 end) as project_count
    from projects
    group by 1

),

final as (

    select
        team_ids.team_id,
        coalesce(
            org_teams.team_name,
            case team_ids.team_id
                when '{{ unallocated_owner() }}' then 'Unallocated (owner unknown)'
                when '{{ idle_owner() }}' then 'Idle capacity (kept visible)'
                else team_ids.team_id
            end
        ) as team_name,
        coalesce(project_counts.project_count, 0) as project_count,
        team_ids.team_id in ('{{ unallocated_owner() }}', '{{ idle_owner() }}') as is_system_owner
    from team_ids
    left join org_teams on team_ids.team_id = org_teams.team_id
    left join project_counts on team_ids.team_id = project_counts.team_id

)

select * from final
