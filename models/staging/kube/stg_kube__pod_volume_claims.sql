-- One row per pod incarnation, claim and unbroken run of samples (kube_pod_spec_volumes_persistentvolumeclaims_info):
-- the time the pod's spec held the claim. Each sample stands for the time until the series' next sample, at
-- most the series' own step when a gap is longer than gpucost_max_sample_gap_seconds (a missing scrape is not
-- a mount, nor is it an unmount within the bound); a longer gap starts a new run. Samples landed twice count once.
with

source as (

    -- depends_on: {{ ref('base_kube__series') }}
    select * from ({{ kube_series_samples() }}) as kube_samples
    where metric_name = 'kube_pod_spec_volumes_persistentvolumeclaims_info' and quarantine_reason is null

),

samples as (

    select distinct
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('uid') }} as uid,
        {{ prom_label('persistentvolumeclaim') }} as persistent_volume_claim,
        {{ prom_label('volume') }} as volume,
        sampled_epoch
    from source
    where try_cast(sample_value as double) > 0

),

gaps as (

    select
        *,
        lead(sampled_epoch) over (
            partition by cluster_id, namespace, pod, uid, persistent_volume_claim, volume order by sampled_epoch
        ) - sampled_epoch as gap_seconds
    from samples
    where pod is not null and persistent_volume_claim is not null

),

steps as (

    select
        cluster_id,
        namespace,
        pod,
        uid,
        persistent_volume_claim,
        volume,
        min(case when gap_seconds > 0 then gap_seconds end) as step_seconds
    from gaps
    group by 1, 2, 3, 4, 5, 6

),

durations as (

    select
        gaps.*,
        {{ sample_duration('gaps.gap_seconds', 'steps.step_seconds') }} as duration_seconds
    from gaps
    inner join steps
        on gaps.cluster_id = steps.cluster_id
        and gaps.namespace is not distinct from steps.namespace
        and gaps.pod = steps.pod
        and gaps.uid is not distinct from steps.uid
        and gaps.persistent_volume_claim = steps.persistent_volume_claim
        and gaps.volume is not distinct from steps.volume

),

flagged as (

    -- a new run starts where the previous sample's time did not reach this one (a gap)
    select
        *,
        coalesce(
            lag(sampled_epoch + duration_seconds) over (
                partition by cluster_id, namespace, pod, uid, persistent_volume_claim, volume
                order by sampled_epoch
            ) < sampled_epoch,
            true
        ) as is_run_start
    from durations

),

runs as (

    select
        *,
        sum(case when is_run_start then 1 else 0 end) over (
            partition by cluster_id, namespace, pod, uid, persistent_volume_claim, volume
            order by sampled_epoch rows between unbounded preceding and current row
        ) as run_number
    from flagged

),

mount_runs as (

    select
        cluster_id,
        namespace,
        pod,
        uid,
        persistent_volume_claim,
        volume,
        run_number,
        cast(min(sampled_epoch) as bigint) as mounted_from_epoch,
        cast(max(sampled_epoch + duration_seconds) as bigint) as mounted_until_epoch
    from runs
    group by 1, 2, 3, 4, 5, 6, 7

),

final as (

    select
        {{ workload_id('cluster_id', 'namespace', 'pod', 'uid') }} as workload_id,
        cluster_id || '/' || coalesce(namespace, '') || '/' || persistent_volume_claim as claim_id,
        cluster_id,
        namespace,
        pod,
        uid,
        persistent_volume_claim,
        volume,
        mounted_from_epoch,
        mounted_until_epoch
    from mount_runs

)

select * from final
