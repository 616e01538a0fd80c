-- Every project money can land on: the org mapping's, those discovered in tags and labels, and the
-- system owners (__unallocated__, __idle__, __unattributed__: a team's cost whose project is not known, the
-- platform project).
with

org_mapping as (

    select * from {{ ref('int_org_projects') }}

),

allocations as (

    select * from {{ ref('int_cost_allocations_owned') }}

),

workloads as (

    select * from {{ ref('int_workloads') }}

),

discovered as (

    select
        project_id,
        min(team_id) as team_id
    from allocations
    where project_id not in ('{{ unallocated_owner() }}', '{{ idle_owner() }}')
    group by 1

),

system_projects as (

    select
        '{{ unallocated_owner() }}' as project_id,
        'Unallocated (owner unknown)' as project_name,
        '{{ unallocated_owner() }}' as team_id,
        'system' as project_source
    union all
    select
        '{{ idle_owner() }}' as project_id,
        'Idle capacity (kept visible)' as project_name,
        '{{ idle_owner() }}' as team_id,
        'system' as project_source
    union all
    select
        '{{ team_only_project() }}' as project_id,
        'Team known, project not attributed (model_team)' as project_name,
        '{{ unallocated_owner() }}' as team_id,
        'system' as project_source
    union all
    select
        '{{ var("gpucost_platform_project_id") }}' as project_id,
        'GPU platform (idle owner under the platform policy)' as project_name,
        '{{ var("gpucost_platform_team_id") }}' as team_id,
        'system' as project_source

),

projects as (

    select
        project_id,
        coalesce(project_name, project_id) as project_name,
        team_id,
        'org_mapping' as project_source
    from org_mapping
    union all
    select
        discovered.project_id,
        discovered.project_id as project_name,
        discovered.team_id,
        'discovered' as project_source
    from discovered
    where
        discovered.project_id not in (select org_mapping.project_id from org_mapping)
        and discovered.project_id not in (select system_projects.project_id from system_projects)
    union all
    select system_projects.*
    from system_projects
    where system_projects.project_id not in (select org_mapping.project_id from org_mapping)

),

workload_counts as (

    select
        project_id,
        count(*) as workload_count
    from workloads
    group by 1

),

final as (

    select
        projects.project_id,
        projects.team_id,
        projects.project_name,
        projects.project_source,
        coalesce(workload_counts.workload_count, 0) as workload_count,
        projects.project_source = 'system' as is_system_owner
    from projects
    left join workload_counts on projects.project_id = workload_counts.project_id

)

select * from final
