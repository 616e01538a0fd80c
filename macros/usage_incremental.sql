{#- int_gpu_usage_hourly's incremental cutoff (epoch seconds of an hour): the earliest of the latest hour
    built minus var gpucost_lookback_hours, the first sample of any telemetry file loaded or removed in this
    build minus gpucost_max_sample_gap_seconds, and the end of what was known of a pod seen in a newly
    loaded kube_pod_info file. 0 on a full build. Found before the model runs (a constant in the SQL, and
    the same value for the pre-hook that clears the hours from it on). -#}
{% macro usage_hourly_cutoff() -%}
    {%- if not (is_incremental() and execute) -%}{{ return(0) }}{%- endif -%}
    {%- set loaded_now -%}
        cast('{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}' as timestamp)
    {%- endset -%}
    {%- set max_gap = var('gpucost_max_sample_gap_seconds') -%}
    {%- set cutoff_query -%}
    select cast(least(
        (select coalesce(max(hour_start_epoch), 0) - {{ var('gpucost_lookback_hours') }} * 3600 from {{ this }}),
        (
            select {{ epoch_hour_floor('(min(first_sampled_epoch) - ' ~ max_gap ~ ')') }}
            from {{ ref('base_dcgm__series') }}
            where loaded_at = {{ loaded_now }}
        ),
        (
            select {{ epoch_hour_floor('(min(first_sampled_epoch) - ' ~ max_gap ~ ')') }}
            from {{ ref('base_kube__series') }}
            where loaded_at = {{ loaded_now }}
        ),
        (
            select {{ epoch_hour_floor('min(known.last_seen_epoch)') }}
            from (
                select
                    cluster_id,
                    labels['namespace'] as namespace,
                    labels['pod'] as pod,
                    max(last_sampled_epoch) as last_seen_epoch
                from {{ ref('base_kube__series') }}
                where metric_name = 'kube_pod_info' and loaded_at <> {{ loaded_now }}
                group by 1, 2, 3
            ) as known
            inner join (
                select distinct
                    cluster_id,
                    labels['namespace'] as namespace,
                    labels['pod'] as pod
                from {{ ref('base_kube__series') }}
                where metric_name = 'kube_pod_info' and loaded_at = {{ loaded_now }}
            ) as grown
                on known.cluster_id = grown.cluster_id
                and known.namespace is not distinct from grown.namespace
                and known.pod is not distinct from grown.pod
        )
    ) as bigint)
{%- endset -%}
    {{ return(run_query(cutoff_query).columns[0].values()[0]) }}
{%- endmacro %}

{#- pre-hook of int_gpu_usage_hourly: an incremental run first deletes every hour from the cutoff on, so an
    hour whose rows change workload or vanish (a removed or re-delivered file) keeps no stale row. -#}
{% macro delete_usage_hours_to_recompute() -%}
    {%- if is_incremental() -%}
        delete from {{ this }} where hour_start_epoch >= {{ usage_hourly_cutoff() }}
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
