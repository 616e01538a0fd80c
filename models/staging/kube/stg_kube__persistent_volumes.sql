-- One row per cluster and PersistentVolume (kube_persistentvolume_info, kube_persistentvolume_claim_ref):
-- the cloud disk behind it and the claim it is bound to, as last seen.
with

source as (

    -- depends_on: {{ ref('base_kube__series') }}
    select * from ({{ kube_series_samples() }}) as kube_samples
    where
        metric_name in ('kube_persistentvolume_info', 'kube_persistentvolume_claim_ref')
        and quarantine_reason is null

),

volumes as (

    select
        cluster_id,
        {{ prom_label('persistentvolume') }} as persistent_volume,
        {{ arg_max_of(prom_label('storageclass'), 'sampled_epoch') }} as storage_class,
        {{ arg_max_of(prom_label('csi_driver'), 'sampled_epoch') }} as csi_driver,
        {{ arg_max_of(prom_label('csi_volume_handle'), 'sampled_epoch') }} as csi_volume_handle,
        {{ arg_max_of(prom_label('ebs_volume_id'), 'sampled_epoch') }} as ebs_volume_id,
        {{ arg_max_of(prom_label('gce_persistent_disk_name'), 'sampled_epoch') }} as gce_persistent_disk_name,
        {{ arg_max_of(prom_label('azure_disk_name'), 'sampled_epoch') }} as azure_disk_name,
        {{ arg_max_of(
            "case when metric_name = 'kube_persistentvolume_claim_ref' then " ~ prom_label('claim_namespace') ~ " end",
            "case when metric_name = 'kube_persistentvolume_claim_ref' then sampled_epoch end"
        ) }} as claim_namespace,
        {{ arg_max_of(
            "case when metric_name = 'kube_persistentvolume_claim_ref' then " ~ prom_label('name') ~ " end",
            "case when metric_name = 'kube_persistentvolume_claim_ref' then sampled_epoch end"
        ) }} as claim_name,
        min(sampled_epoch) as first_seen_epoch,
        max(sampled_epoch) as last_seen_epoch
    from source
    group by 1, 2

),

final as (

    select
        cluster_id || '/' || persistent_volume as persistent_volume_id,
        cluster_id,
        persistent_volume,
        storage_class,
        csi_driver,
        csi_volume_handle,
        ebs_volume_id,
        gce_persistent_disk_name,
        azure_disk_name,
        -- the cloud disk id as the bill names it (see macro volume_key)
        coalesce(csi_volume_handle, ebs_volume_id, gce_persistent_disk_name, azure_disk_name) as cloud_volume_id,
        {{ volume_key('coalesce(csi_volume_handle, ebs_volume_id, gce_persistent_disk_name, azure_disk_name)') }}
            as volume_key,
        claim_namespace,
        claim_name,
        first_seen_epoch,
        last_seen_epoch
    from volumes
    where persistent_volume is not null

)

select * from final
