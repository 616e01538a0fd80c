-- One row per cloud disk, claim and pod mount: the cloud volume a bill names (volume_key) -> the
-- PersistentVolume carrying it (kube_persistentvolume_info) -> the claim bound to it (kube_persistentvolumeclaim_info
-- volumename, or the volume's kube_persistentvolume_claim_ref) -> each pod incarnation whose spec held the
-- claim (kube_pod_spec_volumes_persistentvolumeclaims_info), for the time it held it while alive (from
-- kube_pod_start_time to kube_pod_completion_time). A claim no pod ever held has one row with a null workload.
with

persistent_volumes as (

    select * from {{ ref('stg_kube__persistent_volumes') }}
    where volume_key is not null

),

claims as (

    select * from {{ ref('stg_kube__persistent_volume_claims') }}

),

pod_claims as (

    select * from {{ ref('stg_kube__pod_volume_claims') }}

),

pods as (

    select * from {{ ref('stg_kube__pods') }}

),

bindings as (

    -- the claim side and the volume side name the same binding; either is enough
    select
        persistent_volumes.volume_key,
        persistent_volumes.persistent_volume_id,
        claims.claim_id,
        claims.first_seen_epoch as bound_from_epoch,
        claims.last_seen_epoch as bound_last_seen_epoch
    from persistent_volumes
    inner join claims
        on persistent_volumes.cluster_id = claims.cluster_id
        and persistent_volumes.persistent_volume = claims.persistent_volume
    union
    select
        volume_key,
        persistent_volume_id,
        cluster_id || '/' || claim_namespace || '/' || claim_name as claim_id,
        cast(null as bigint) as bound_from_epoch,
        cast(null as bigint) as bound_last_seen_epoch
    from persistent_volumes
    where claim_name is not null and claim_namespace is not null

),

claim_bindings as (

    -- a claim deleted and re-created under its name binds another volume: then its pods held each volume
    -- only while that binding was seen
    select
        volume_key,
        persistent_volume_id,
        claim_id,
        min(bound_from_epoch) as bound_from_epoch,
        max(bound_last_seen_epoch) as bound_last_seen_epoch,
        count(*) over (partition by claim_id) > 1 as is_rebound
    from bindings
    group by 1, 2, 3

),

mounts as (

    select
        claim_bindings.volume_key,
        claim_bindings.persistent_volume_id,
        claim_bindings.claim_id,
        pod_claims.workload_id,
        greatest(
            pod_claims.mounted_from_epoch,
            coalesce({{ epoch_seconds('pods.started_at') }}, pod_claims.mounted_from_epoch),
            case when claim_bindings.is_rebound then claim_bindings.bound_from_epoch end
        ) as mounted_from_epoch,
        least(
            pod_claims.mounted_until_epoch,
            coalesce({{ epoch_seconds('pods.completed_at') }}, pod_claims.mounted_until_epoch),
            case
                when claim_bindings.is_rebound
                    then claim_bindings.bound_last_seen_epoch + {{ var('gpucost_max_sample_gap_seconds') }}
            end
        ) as mounted_until_epoch
    from claim_bindings
    inner join pod_claims on claim_bindings.claim_id = pod_claims.claim_id
    left join pods on pod_claims.workload_id = pods.workload_id

),

held as (

    select * from mounts
    where mounted_until_epoch > mounted_from_epoch

),

held_claims as (

    select distinct
        claim_id,
        persistent_volume_id
    from held

),

final as (

    select
        volume_key,
        persistent_volume_id,
        claim_id,
        workload_id,
        mounted_from_epoch,
        mounted_until_epoch
    from held
    union all
    -- a claim no pod held while alive (never named by a pod, or only by one that was not running)
    select
        claim_bindings.volume_key,
        claim_bindings.persistent_volume_id,
        claim_bindings.claim_id,
        cast(null as string) as workload_id,
        cast(null as bigint) as mounted_from_epoch,
        cast(null as bigint) as mounted_until_epoch
    from claim_bindings
    left join held_claims
        on claim_bindings.claim_id = held_claims.claim_id
        and claim_bindings.persistent_volume_id = held_claims.persistent_volume_id
    where held_claims.claim_id is null

)

select * from final
