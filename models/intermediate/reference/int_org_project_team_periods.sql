-- The teams a dated org mapping gives a project over time: one row per period (valid_from / valid_to in
-- reference/*.csv, UTC dates, valid_to exclusive) of every project with a dated row, as epoch seconds (an open
-- start or end is null). int_workloads charges a workload of such a project to the team of the period it started
-- in; the hand-over detection leaves these projects alone (the organisation declared their history).
with

mapping_rows as (

    select * from {{ ref('base_reference__org_mapping_rows') }}

),

dated_projects as (

    select distinct project_id
    from mapping_rows
    where valid_from is not null or valid_to is not null

),

final as (

    select
        mapping_rows.project_id,
        mapping_rows.team_id,
        mapping_rows.valid_from,
        mapping_rows.valid_to,
        {{ epoch_seconds('cast(mapping_rows.valid_from as timestamp)') }} as valid_from_epoch,
        {{ epoch_seconds('cast(mapping_rows.valid_to as timestamp)') }} as valid_to_epoch,
        mapping_rows.source_file
    from mapping_rows
    inner join dated_projects on mapping_rows.project_id = dated_projects.project_id

)

select * from final
