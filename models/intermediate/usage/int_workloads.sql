-- One row per workload (pod) seen in GPU telemetry or kube labels, with its owner resolved from labels.
-- A project label is trusted only when it names a known project (when an org mapping is landed);
-- otherwise the workload is untagged and the reason says why.
with

usage as (

    select * from {{ ref('int_gpu_usage_hourly') }}

),

pod_labels as (

    select * from {{ ref('stg_kube__pod_labels') }}

),

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

),

mapping_size as (

    select count(*) as known_projects from org_mapping

),

workload_ids as (

    select distinct
        workload_id,
        cluster_id
    from usage
    where workload_id is not null
    union
    select
        workload_id,
        cluster_id
    from pod_labels

),

labelled as (

    select
        workload_ids.workload_id,
        workload_ids.cluster_id,
        split_part(workload_ids.workload_id, '/', 2) as namespace,
        split_part(workload_ids.workload_id, '/', 3) as pod,
        lower(trim(pod_labels.label_project_id)) as label_project_id,
        lower(trim(pod_labels.label_team_id)) as label_team_id,
        lower(trim(pod_labels.label_user_id)) as label_user_id,
        pod_labels.label_app
    from workload_ids
    left join pod_labels on workload_ids.workload_id = pod_labels.workload_id

),

resolved as (

    select
        labelled.*,
        case
            when labelled.label_project_id is null then null
            when mapping_size.known_projects = 0 then labelled.label_project_id
            when org_mapping.project_id is not null then org_mapping.project_id
        end as project_id,
        org_mapping.team_id as mapped_team_id
    from labelled
    cross join mapping_size
    left join org_mapping on labelled.label_project_id = org_mapping.project_id

),

final as (

    select
        workload_id,
        cluster_id,
        coalesce(mapped_team_id, label_team_id, '{{ unallocated_owner() }}') as team_id,
        coalesce(project_id, '{{ unallocated_owner() }}') as project_id,
        label_user_id as user_id,
        coalesce(mapped_team_id, label_team_id, '{{ unallocated_owner() }}')
        || '|' || coalesce(project_id, '{{ unallocated_owner() }}') as owner_key,
        namespace,
        pod,
        label_project_id,
        label_team_id,
        label_app,
        case when project_id is not null then 'pod_label' else 'none' end as attribution_method,
        case
            when label_project_id is null then 'workload_missing_project_label'
            when project_id is null then 'workload_unknown_project_label'
        end as unattributed_reason,
        project_id is not null as is_attributed
    from resolved

)

select * from final
