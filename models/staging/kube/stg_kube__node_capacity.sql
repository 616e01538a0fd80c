-- One row per cluster node: the GPUs, CPU cores and memory bytes it offers (kube_node_status_capacity, the
-- largest value seen), the denominators of the node's CPU and memory parts.
with

source as (

    -- depends_on: {{ ref('base_kube__series') }}
    select * from ({{ kube_series_samples() }}) as kube_samples
    where
        metric_name = 'kube_node_status_capacity'
        and quarantine_reason is null
        and labels['resource'] in ('cpu', 'memory', 'nvidia_com_gpu', 'nvidia.com/gpu')

),

final as (

    select
        cluster_id || '/' || {{ prom_label('node') }} as node_id,
        cluster_id,
        {{ prom_label('node') }} as node_name,
        max(
            case
                when labels['resource'] in ('nvidia_com_gpu', 'nvidia.com/gpu') then try_cast(sample_value as double)
            end
        ) as gpu_capacity,
        max(case when labels['resource'] = 'cpu' then try_cast(sample_value as double) end) as cpu_cores,
        max(case when labels['resource'] = 'memory' then try_cast(sample_value as double) end) as memory_bytes
    from source
    where {{ prom_label('node') }} is not null
    group by 1, 2, 3

)

select * from final
