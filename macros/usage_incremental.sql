{#- The newest loaded_at of telemetry staging tables, as a timestamp expression (null when they are empty or not
    built): base_dcgm__series and base_kube__series by default; the serving counters pass base_serving__series. An
    incremental telemetry model keeps it on its rows (inputs_loaded_at): its next run reads what those tables loaded
    after the newest value it holds (telemetry_watermark), whichever invocation loaded it. -#}
{% macro telemetry_loaded_through(models=['base_dcgm__series', 'base_kube__series']) -%}
    {%- set reads = [] -%}
    {%- for model in models -%}
        {%- set relation = ref(model) -%}
        {%- if execute and load_relation(relation) is not none -%}
            {%- do reads.append('select loaded_at from ' ~ relation) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set newest = none -%}
    {%- if reads and reads | length == models | length -%}
        {%- set newest = run_query(
            "select cast(max(loaded_at) as string) from (" ~ reads | join(' union all ') ~ ") as loads"
        ).columns[0].values()[0] -%}
    {%- endif -%}
    {{ return("cast('" ~ newest ~ "' as timestamp)" if newest is not none else 'cast(null as timestamp)') }}
{%- endmacro %}

{#- The newest inputs_loaded_at (telemetry_loaded_through) of an incremental telemetry table, as text: what its
    rows were computed from. None when the table does not exist, is empty or predates the column. -#}
{% macro telemetry_watermark(relation) -%}
    {%- if not execute or relation is none -%}{{ return(none) }}{%- endif -%}
    {%- set columns = adapter.get_columns_in_relation(relation) | map(attribute='name') | list -%}
    {%- if 'inputs_loaded_at' not in columns -%}{{ return(none) }}{%- endif -%}
    {{ return(run_query("select cast(max(inputs_loaded_at) as string) from " ~ relation).columns[0].values()[0]) }}
{%- endmacro %}

{#- int_gpu_usage_hourly's incremental cutoff (epoch seconds of an hour): the earliest of the latest hour
    built minus var gpucost_lookback_hours, the first sample of any telemetry file loaded or removed since the
    table's rows were computed (telemetry_watermark; in this invocation or an earlier one) minus
    gpucost_max_sample_gap_seconds, and the end of what was known of a pod seen in a kube_pod_info file
    loaded since. 0 on a full build, and when the table predates inputs_loaded_at. Found before the model
    runs (a constant in the SQL, and the same value for the pre-hook that clears the hours from it on). -#}
{% macro usage_hourly_cutoff() -%}
    {%- if not (is_incremental() and execute) -%}{{ return(0) }}{%- endif -%}
    {%- set watermark = telemetry_watermark(this) -%}
    {%- if watermark is none -%}{{ return(0) }}{%- endif -%}
    {%- set loaded_since -%}
        loaded_at > cast('{{ watermark }}' as timestamp)
    {%- endset -%}
    {%- set max_gap = var('gpucost_max_sample_gap_seconds') -%}
    {%- set cutoff_query -%}
    select cast(least(
        (select coalesce(max(hour_start_epoch), 0) - {{ var('gpucost_lookback_hours') }} * 3600 from {{ this }}),
        (
            select {{ epoch_hour_floor('(min(first_sampled_epoch) - ' ~ max_gap ~ ')') }}
            from {{ ref('base_dcgm__series') }}
            where {{ loaded_since }}
        ),
        (
            select {{ epoch_hour_floor('(min(first_sampled_epoch) - ' ~ max_gap ~ ')') }}
            from {{ ref('base_kube__series') }}
            where {{ loaded_since }}
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
                where metric_name = 'kube_pod_info' and not ({{ loaded_since }})
                group by 1, 2, 3
            ) as known
            inner join (
                select distinct
                    cluster_id,
                    labels['namespace'] as namespace,
                    labels['pod'] as pod
                from {{ ref('base_kube__series') }}
                where metric_name = 'kube_pod_info' and {{ loaded_since }}
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
