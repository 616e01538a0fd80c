-- The organisation mapping (project -> team) from <landing>/reference/*.csv, when one is landed.
with

source as (

    {{ read_optional_csv('reference/*.csv', ['project_id', 'project_name', 'team_id', 'team_name', 'cost_center']) }}

),

final as (

    select
        lower(trim(project_id)) as project_id,
        lower(trim(team_id)) as team_id,
        trim(project_name) as project_name,
        trim(team_name) as team_name,
        trim(cost_center) as cost_center,
        filename as source_file
    from source
    where nullif(trim(project_id), '') is not null

)

select * from final
