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
        filename as source_file,
        case
            when try_cast(sample_value as double) is null
                or {{ is_not_finite('try_cast(sample_value as double)') }}
                then 'non-numeric sample value: ' || coalesce(sample_value, '<null>')
            when try_cast(sample_value as double) < 0 then 'negative value: ' || sample_value
            when cast(round(sampled_epoch) as bigint) < {{ var('gpucost_min_epoch') }}
                or cast(round(sampled_epoch) as bigint) > {{ var('gpucost_max_epoch') }}
                then 'timestamp out of range: ' || cast(sampled_epoch as string)
        end as quarantine_reason
    from source

)

select * from final
