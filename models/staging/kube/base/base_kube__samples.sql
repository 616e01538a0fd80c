{{ config(materialized='table') }}

-- kube-state-metrics series scraped into Prometheus, landed as query_range JSON: read once, long form.
with

source as (

    {{ read_prometheus_matrix('metrics/kube') }}

),

final as (

    select
        {{ prom_label('__name__') }} as metric_name,
        {{ prom_cluster('metrics/kube') }} as cluster_id,
        labels,
        cast(round(sampled_epoch) as bigint) as sampled_epoch,
        sample_value,
        filename as source_file
    from source

)

select * from final
