{{ config(materialized='table') }}

-- DCGM exporter series scraped into Prometheus, landed as query_range JSON: read once, long form.
with

source as (

    {{ read_prometheus_matrix('metrics/dcgm') }}

),

final as (

    select
        {{ prom_label('__name__') }} as metric_name,
        {{ prom_cluster('metrics/dcgm') }} as cluster_id,
        coalesce(
            {{ prom_label('Hostname') }},
            {{ prom_label('hostname') }},
            {{ prom_label('kubernetes_node') }},
            {{ prom_label('node') }}
        ) as node_name,
        {{ prom_label('UUID') }} as gpu_uuid,
        {{ prom_label('gpu') }} as gpu_index,
        {{ prom_label('modelName') }} as gpu_model,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('container') }} as container,
        cast(round(sampled_epoch) as bigint) as sampled_epoch,
        try_cast(sample_value as double) as sample_value,
        filename as source_file
    from source

)

select * from final
