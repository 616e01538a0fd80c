-- CPU and memory requests of pod containers over time (kube_pod_container_resource_requests, resource cpu in
-- cores, memory in bytes), with the node: what every pod holds of a node's CPU and memory, GPU pods and
-- CPU-only pods alike. One row per container's request and sample time (one_row_per_sample: a sample landed
-- twice counts once).
with

source as (

    -- depends_on: {{ ref('base_kube__series') }}
    select * from ({{ kube_series_samples() }}) as kube_samples
    where
        metric_name = 'kube_pod_container_resource_requests'
        and quarantine_reason is null
        and labels['resource'] in ('cpu', 'memory')

),

requests as (

    select
        {{ workload_id('cluster_id', prom_label('namespace'), prom_label('pod'), prom_label('uid')) }} as workload_id,
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('container') }} as container,
        {{ prom_label('node') }} as node_name,
        labels['resource'] as resource_part,
        try_cast(sample_value as double) as requested_amount,
        sampled_epoch
    from source

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
            'resource_part',
            'sampled_epoch',
        ],
        'requested_amount'
    ) }}

)

select * from final
