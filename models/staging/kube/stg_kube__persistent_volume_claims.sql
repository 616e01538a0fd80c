-- One row per cluster, PersistentVolumeClaim and the volume it is bound to (kube_persistentvolumeclaim_info).
-- A claim deleted and re-created under the same name binds a new volume: a new row.
with

source as (

    -- depends_on: {{ ref('base_kube__series') }}
    select * from ({{ kube_series_samples() }}) as kube_samples
    where metric_name = 'kube_persistentvolumeclaim_info' and quarantine_reason is null

),

claims as (

    select
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('persistentvolumeclaim') }} as persistent_volume_claim,
        {{ prom_label('volumename') }} as persistent_volume,
        {{ arg_max_of(prom_label('storageclass'), 'sampled_epoch') }} as storage_class,
        min(sampled_epoch) as first_seen_epoch,
        max(sampled_epoch) as last_seen_epoch
    from source
    group by 1, 2, 3, 4

),

final as (

    select
        cluster_id || '/' || coalesce(namespace, '') || '/' || persistent_volume_claim
        || coalesce('/' || persistent_volume, '') as claim_volume_id,
        cluster_id || '/' || coalesce(namespace, '') || '/' || persistent_volume_claim as claim_id,
        cluster_id,
        namespace,
        persistent_volume_claim,
        persistent_volume,
        storage_class,
        first_seen_epoch,
        last_seen_epoch
    from claims
    where persistent_volume_claim is not null

)

select * from final
