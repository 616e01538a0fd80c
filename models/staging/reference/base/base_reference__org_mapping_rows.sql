-- Every row of the organisation mapping landed as <landing>/reference/*.csv, typed. A mapping may date its rows
-- (optional columns valid_from, valid_to: UTC dates, valid_to exclusive, empty = open): a project that moved
-- between teams then has one row per period. stg_reference__org_mapping keeps each project's current row,
-- int_org_project_team_periods the dated ones.
with

source as (

    {{ read_optional_csv(
        'reference/*.csv',
        ['project_id', 'project_name', 'team_id', 'team_name', 'cost_center', 'valid_from', 'valid_to']
    ) }}

),

final as (

    select
        lower(trim(project_id)) as project_id,
        lower(trim(team_id)) as team_id,
        trim(project_name) as project_name,
        trim(team_name) as team_name,
        trim(cost_center) as cost_center,
        nullif(trim(valid_from), '') as valid_from_text,
        nullif(trim(valid_to), '') as valid_to_text,
        {{ dbt.safe_cast("nullif(trim(valid_from), '')", 'date') }} as valid_from,
        {{ dbt.safe_cast("nullif(trim(valid_to), '')", 'date') }} as valid_to,
        filename as source_file
    from source
    where nullif(trim(project_id), '') is not null

)

select * from final
