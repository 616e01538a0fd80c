-- One row per workload (pod incarnation) seen in GPU telemetry or kube labels, with its declared owner resolved in
-- this order, the first that names a known project winning:
--   0. a human override naming a project (below) beats even a valid tag: a person corrected a suspected
--      mislabel in review (or confirmed the tag)
--   1. a valid explicit tag: the pod's project label, or a Slurm job's Account (unknown ids and typos are not
--      trusted, only reported)
--   2. a human override (seed attribution_overrides: a pattern on a workload field -> project, who, why); the
--      latest decision wins (decided_at, then override_id, last first). An override that names no project (empty
--      project_id, no capture) is a rejection from the review queue: "not the suggested project, owner unknown".
--      The workload is then declared unattributed (attribution_method review_rejected, unattributed_reason
--      rejected_in_review): the model does not score it and its money stays unallocated with that reason.
--   3. a declarative rule (seed attribution_rules, lowest priority first; a rule may take the project from
--      its regex's first capture group)
--   4. otherwise unattributed, with the reason (int_workloads then asks the learned model).
-- "Known" means listed in the org mapping when one is landed; without one every named project is accepted.
with

usage as (

    select * from {{ ref('int_gpu_usage_hourly') }}

),

pod_labels as (

    select * from {{ ref('stg_kube__pod_labels') }}

),

containers as (

    select * from {{ ref('stg_kube__pod_containers') }}

),

slurm_allocation_nodes as (

    select * from {{ ref('int_slurm_allocation_nodes') }}

),

slurm_jobs as (

    select
        workload_id,
        min(account) as account,
        min(user_name) as user_name,
        min(job_name) as job_name
    from slurm_allocation_nodes
    group by 1

),

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

),

overrides as (

    select * from {{ ref('attribution_overrides') }}

),

rules as (

    select * from {{ ref('attribution_rules') }}

),

overrides_typed as (

    -- a rejection in review: no project, and no capture group to take one from (Spark's regexp_extract fails
    -- on a group the pattern does not have); chr(92) is a backslash
    select
        *,
        nullif(trim(project_id), '') is null
        and not {{ regexp_search() }}(match_pattern, '(^|[^' || chr(92) || chr(92) || '])[(]([^?]|$)')
            as is_rejection
    from overrides

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

images as (

    -- the workload's own image: sidecars (service mesh proxies) do not say what the work is
    select
        workload_id,
        min(image_repository) as image_repository
    from containers
    where not {{ regexp_search() }}(coalesce(image_repository, ''), '(istio|linkerd|envoy)')
    group by 1

),

labelled as (

    select
        workload_ids.workload_id,
        workload_ids.cluster_id,
        split_part(workload_ids.workload_id, '/', 2) as namespace,
        split_part(workload_ids.workload_id, '/', 3) as pod,
        lower(trim(coalesce(pod_labels.label_project_id, slurm_jobs.account))) as label_project_id,
        lower(trim(pod_labels.label_team_id)) as label_team_id,
        lower(trim(coalesce(pod_labels.label_user_id, slurm_jobs.user_name))) as label_user_id,
        coalesce(pod_labels.label_app, slurm_jobs.job_name) as label_app,
        images.image_repository,
        slurm_jobs.workload_id is not null as is_slurm_job
    from workload_ids
    left join pod_labels on workload_ids.workload_id = pod_labels.workload_id
    left join images on workload_ids.workload_id = images.workload_id
    left join slurm_jobs on workload_ids.workload_id = slurm_jobs.workload_id

),

candidates as (

    -- every (workload, override or rule) pair whose pattern matches the named field
    select
        labelled.workload_id,
        'override' as candidate_source,
        overrides.override_id as candidate_id,
        0 as candidate_priority,
        overrides.decided_at as candidate_decided_at,
        case when overrides.is_rejection then cast(null as string) else {{
            attribution_project('labelled', 'overrides')
        }} end as candidate_project_id,
        overrides.is_rejection as candidate_is_rejection
    from labelled
    inner join overrides_typed as overrides
        on {{ regexp_search() }}({{ attribution_field('labelled', 'overrides.match_field') }}, overrides.match_pattern)
    union all
    select
        labelled.workload_id,
        'rule' as candidate_source,
        rules.rule_id as candidate_id,
        rules.priority as candidate_priority,
        cast(null as date) as candidate_decided_at,
        {{ attribution_project('labelled', 'rules') }} as candidate_project_id,
        false as candidate_is_rejection
    from labelled
    inner join rules
        on {{ regexp_search() }}({{ attribution_field('labelled', 'rules.match_field') }}, rules.match_pattern)

),

valid_candidates as (

    select
        candidates.*,
        row_number() over (
            partition by candidates.workload_id
            order by
                case candidates.candidate_source when 'override' then 0 else 1 end asc,
                candidates.candidate_priority asc,
                -- the latest human decision wins (a review decision taken again)
                candidates.candidate_decided_at desc nulls last,
                case when candidates.candidate_source = 'override' then candidates.candidate_id end desc nulls last,
                candidates.candidate_id asc
        ) as candidate_rank
    from candidates
    cross join mapping_size
    where
        candidates.candidate_is_rejection
        or (
            candidates.candidate_project_id is not null
            and (
                mapping_size.known_projects = 0
                or candidates.candidate_project_id in (select org_mapping.project_id from org_mapping)
            )
        )

),

resolved as (

    select
        labelled.*,
        case
            when labelled.label_project_id is null then null
            when mapping_size.known_projects = 0 then labelled.label_project_id
            when org_mapping.project_id is not null then org_mapping.project_id
        end as label_project_valid,
        valid_candidates.candidate_source,
        valid_candidates.candidate_id,
        valid_candidates.candidate_project_id,
        coalesce(valid_candidates.candidate_is_rejection, false) as is_rejected
    from labelled
    cross join mapping_size
    left join org_mapping on labelled.label_project_id = org_mapping.project_id
    left join valid_candidates
        on
        labelled.workload_id = valid_candidates.workload_id
        and valid_candidates.candidate_rank = 1

),

owned as (

    select
        resolved.*,
        -- a person's override naming a project beats the tag (a suspected mislabel corrected in review)
        case
            when resolved.candidate_source = 'override' and resolved.candidate_project_id is not null
                then resolved.candidate_project_id
            else coalesce(resolved.label_project_valid, resolved.candidate_project_id)
        end as project_id,
        case
            when resolved.candidate_source = 'override' and resolved.candidate_project_id is not null
                then 'override'
            when resolved.label_project_valid is not null and resolved.is_slurm_job then 'slurm_account'
            when resolved.label_project_valid is not null then 'pod_label'
            when resolved.is_rejected then 'review_rejected'
            when resolved.candidate_source is not null then resolved.candidate_source
            else 'none'
        end as attribution_method,
        case
            when resolved.candidate_source = 'override' and resolved.candidate_project_id is not null
                then resolved.candidate_id
            when resolved.label_project_valid is null then resolved.candidate_id
        end as attribution_rule_id
    from resolved

),

final as (

    select
        owned.workload_id,
        owned.cluster_id,
        coalesce(org_mapping.team_id, owned.label_team_id, '{{ unallocated_owner() }}') as team_id,
        coalesce(owned.project_id, '{{ unallocated_owner() }}') as project_id,
        owned.label_user_id as user_id,
        coalesce(org_mapping.team_id, owned.label_team_id, '{{ unallocated_owner() }}')
        || '|' || coalesce(owned.project_id, '{{ unallocated_owner() }}') as owner_key,
        owned.namespace,
        owned.pod,
        owned.label_project_id,
        owned.label_team_id,
        owned.label_app,
        owned.image_repository,
        owned.attribution_method,
        owned.attribution_rule_id,
        case
            when owned.project_id is not null then null
            when owned.attribution_method = 'review_rejected' then 'rejected_in_review'
            when owned.label_project_id is null then 'workload_missing_project_label'
            else 'workload_unknown_project_label'
        end as unattributed_reason,
        owned.project_id is not null as is_attributed
    from owned
    left join org_mapping on owned.project_id = org_mapping.project_id

)

select * from final
