-- One row per workload: the signals the learned attribution model reads (gpucost.core.attribution), and
-- known_project_id, the label it learns from (a valid project label or a human override; rules are not
-- used as labels: rule_project_id only feeds the neighbours' history features). Code fingerprints (image
-- repository, tag, digest, pod / owner / app names), resource
-- pattern (GPU count and model, duration, hourly utilisation mean / p95 / burstiness) and the start time;
-- the temporal and behavioural features (neighbouring jobs, project mixes) are computed leakage-free in
-- Python from the start times. How the work was launched: a pod's main container command + args, working
-- directory and mounted volume claims (Kubernetes API pod specs, stg_kube__pod_specs: kube-state-metrics does
-- not export them), a Slurm job's SubmitLine, WorkDir and JobName (sacct). Slurm jobs are rows like pods.
-- The creator a webhook stamps on the pod (stg_kube__pod_specs.creator_user_id) stands in for a missing user.
with

declared as (

    select * from {{ ref('int_workload_owners_declared') }}

),

pods as (

    select * from {{ ref('stg_kube__pods') }}

),

containers as (

    select * from {{ ref('stg_kube__pod_containers') }}

),

pod_specs as (

    select * from {{ ref('stg_kube__pod_specs') }}

),

slurm_records as (

    select * from {{ ref('stg_slurm__job_records') }}
    where is_allocation and quarantine_reason is null

),

usage as (

    select * from {{ ref('int_gpu_usage_hourly') }}
    where workload_id is not null

),

nodes as (

    select * from {{ ref('int_gpu_nodes') }}

),

main_containers as (

    -- the workload's own container: sidecars (service mesh proxies) do not say what the work is
    select
        workload_id,
        min(image) as image,
        min(image_id) as image_digest
    from containers
    where not {{ regexp_search() }}(coalesce(image_repository, ''), '(istio|linkerd|envoy)')
    group by 1

),

main_specs as (

    -- the launch of the workload's own container (sidecars left out, as for the image)
    select
        workload_id,
        min(command_line) as command_line,
        min(working_dir) as working_dir,
        min(volume_claims) as volume_claims,
        min(creator_user_id) as creator_user_id
    from pod_specs
    where not {{ regexp_search() }}(coalesce(image, ''), '(istio|linkerd|envoy)')
    group by 1

),

slurm_jobs as (

    -- the workload id int_slurm_allocation_nodes gives a job: <cluster>/slurm/<JobID>
    select
        cluster_id || '/slurm/' || job_id_text as workload_id,
        min(job_name) as job_name,
        min(submit_line) as submit_line,
        min(work_dir) as work_dir,
        min(partition_name) as partition_name,
        min({{ epoch_seconds('started_at') }}) as started_epoch,
        max({{ epoch_seconds('ended_at') }}) as ended_epoch
    from slurm_records
    group by 1

),

hourly as (

    select
        usage.workload_id,
        usage.hour_start_epoch,
        max(nodes.gpu_model) as gpu_model,
        cast(sum(usage.gpu_count) as bigint) as gpu_count,
        -- utilisation in integer micro-percent: the summary below is then exact integer arithmetic
        cast(round(
            {{ double_literal('100000000.0') }} * sum(usage.used_gpu_ms) / nullif(sum(usage.gpu_ms), 0)
        ) as bigint) as util_micro_pct
    from usage
    left join nodes on usage.cluster_id || '/' || usage.node_name = nodes.node_id
    group by 1, 2

),

usage_summary as (

    select
        workload_id,
        min(hour_start_epoch) as first_hour_epoch,
        max(hour_start_epoch) + 3600 as last_hour_end_epoch,
        max(gpu_model) as gpu_model,
        max(gpu_count) as gpu_count,
        -- exact sums of integers, then one division each: a float sum's last bits depend on the order
        -- rows arrive in (85.2984375 rounded to 85.298437 on one build and 85.298438 on the next), and
        -- the same inputs must give the same features (and so the same model) on every build;
        -- burstiness (stddev / mean) is sqrt(n * sum(x^2) - sum(x)^2) / sum(x)
        round(cast(sum(util_micro_pct) as double) / count(util_micro_pct) / 1000000, 6) as util_mean,
        round(percentile_cont(0.95) within group (order by util_micro_pct) / 1000000, 6) as util_p95,
        round(
            sqrt(cast(
                count(util_micro_pct) * sum(cast(util_micro_pct as {{ wide_int_type() }}) * util_micro_pct)
                - sum(cast(util_micro_pct as {{ wide_int_type() }}))
                * sum(cast(util_micro_pct as {{ wide_int_type() }}))
                as double
            ))
            / nullif(cast(sum(util_micro_pct) as double), 0),
            6
        ) as util_burstiness
    from hourly
    group by 1

),

final as (

    select
        declared.workload_id,
        declared.cluster_id,
        declared.namespace,
        declared.pod,
        declared.user_id,
        -- the person who created the workload (an admission webhook's annotation), not a service account:
        -- the user whose history a workload without a user label continues
        main_specs.creator_user_id,
        declared.label_team_id as team_label,
        declared.label_app,
        declared.label_project_id,
        coalesce(pods.created_by_kind, case when slurm_jobs.workload_id is not null then 'SlurmJob' end)
            as created_by_kind,
        coalesce(pods.created_by_name, slurm_jobs.job_name) as created_by_name,
        coalesce(main_specs.command_line, slurm_jobs.submit_line) as command_line,
        coalesce(main_specs.working_dir, slurm_jobs.work_dir) as working_dir,
        main_specs.volume_claims,
        slurm_jobs.partition_name,
        declared.image_repository,
        nullif(regexp_extract(regexp_replace(main_containers.image, '@.*$', ''), ':([^:/]+)$', 1), '')
            as image_tag,
        main_containers.image_digest,
        usage_summary.gpu_model,
        usage_summary.gpu_count,
        coalesce(
            {{ epoch_seconds('pods.started_at') }},
            pods.first_seen_epoch,
            slurm_jobs.started_epoch,
            usage_summary.first_hour_epoch
        ) as started_epoch,
        (
            coalesce(
                {{ epoch_seconds('pods.completed_at') }},
                pods.last_seen_epoch,
                slurm_jobs.ended_epoch,
                usage_summary.last_hour_end_epoch
            )
            - coalesce(
                {{ epoch_seconds('pods.started_at') }},
                pods.first_seen_epoch,
                slurm_jobs.started_epoch,
                usage_summary.first_hour_epoch
            )
        ) / {{ double_literal('3600.0') }} as duration_hours,
        usage_summary.util_mean,
        usage_summary.util_p95,
        usage_summary.util_burstiness,
        case when declared.attribution_method in {{ label_attribution_methods() }} then declared.project_id end
            as known_project_id,
        -- a declarative rule's project: a neighbour's project for the history features, never a label
        case when declared.attribution_method = 'rule' then declared.project_id end as rule_project_id,
        declared.attribution_method as declared_attribution_method
    from declared
    left join pods on declared.workload_id = pods.workload_id
    left join main_containers on declared.workload_id = main_containers.workload_id
    left join usage_summary on declared.workload_id = usage_summary.workload_id
    left join main_specs on declared.workload_id = main_specs.workload_id
    left join slurm_jobs on declared.workload_id = slurm_jobs.workload_id

)

select * from final
