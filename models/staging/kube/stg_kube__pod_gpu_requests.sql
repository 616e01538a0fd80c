-- GPU requests of pod containers over time (kube_pod_container_resource_requests): whole GPUs
-- (nvidia_com_gpu), time-sliced replicas under a renamed resource (nvidia_com_gpu_shared, one replica each),
-- and MIG instances (nvidia_com_mig_1g_10gb; the profile is kept so usage can price the slice).
-- One row per container's request and sample time (one_row_per_sample: a sample landed twice counts once).
with

source as (

    select * from {{ ref('base_kube__series') }}
    where
        metric_name = 'kube_pod_container_resource_requests'
        and sample_count > 0
        and {{ regexp_search() }}(labels['resource'], '^nvidia(_com_|\.com/)(gpu|gpu_shared|gpu\.shared|mig[-_].+)$')

),

samples as (

    select
        cluster_id,
        labels,
        {{ unnest_zip([('sampled_epochs', 'sampled_epoch'), ('sample_values', 'sample_value')]) }}
    from source

),

requests as (

    select
        {{ workload_id('cluster_id', prom_label('namespace'), prom_label('pod'), prom_label('uid')) }} as workload_id,
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('container') }} as container,
        {{ prom_label('node') }} as node_name,
        labels['resource'] as gpu_resource,
        -- nvidia_com_mig_3g_40gb / nvidia.com/mig-3g.40gb -> 3g.40gb
        nullif(regexp_replace(
            regexp_extract(labels['resource'], 'mig[-_]([0-9]+g[._][0-9]+gb)', 1), '_', '.'
        ), '') as mig_profile,
        sample_value as requested_gpus,
        sampled_epoch
    from samples

),

final as (

    {{ one_row_per_sample(
        'requests',
        [
            'workload_id',
            'cluster_id',
            'namespace',
            'pod',
            'container',
            'node_name',
            'gpu_resource',
            'mig_profile',
            'sampled_epoch',
        ],
        'requested_gpus'
    ) }}

)

select * from final
