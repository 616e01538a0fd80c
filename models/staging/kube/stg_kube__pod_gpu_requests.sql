-- GPU requests of pod containers over time (kube_pod_container_resource_requests, resource nvidia_com_gpu).
with

source as (

    select * from {{ ref('base_kube__samples') }}
    where metric_name = 'kube_pod_container_resource_requests' and quarantine_reason is null

),

final as (

    select
        {{ workload_id('cluster_id', prom_label('namespace'), prom_label('pod'), prom_label('uid')) }} as workload_id,
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('container') }} as container,
        {{ prom_label('node') }} as node_name,
        try_cast(sample_value as double) as requested_gpus,
        sampled_epoch
    from source
    where labels['resource'] in ('nvidia_com_gpu', 'nvidia.com/gpu')

)

select * from final
