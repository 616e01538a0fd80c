-- Every team money can land on, with its name and how many projects it owns.
with

projects as (

    select * from {{ ref('dim_projects') }}

),

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

),

allocations as (

    select * from {{ ref('int_cost_allocations_owned') }}

),

team_ids as (

    select team_id from projects
    union
    select team_id from allocations

),

team_names as (

    select
        team_id,
        min(team_name) as team_name
    from org_mapping
    group by 1

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
            team_names.team_name,
            case team_ids.team_id
                when '{{ unallocated_owner() }}' then 'Unallocated (owner unknown)'
                when '{{ idle_owner() }}' then 'Idle capacity (kept visible)'
                else team_ids.team_id
            end
        ) as team_name,
        coalesce(project_counts.project_count, 0) as project_count,
        team_ids.team_id in ('{{ unallocated_owner() }}', '{{ idle_owner() }}') as is_system_owner
    from team_ids
    left join team_names on team_ids.team_id = team_names.team_id
    left join project_counts on team_ids.team_id = project_counts.team_id

)

select * from final
