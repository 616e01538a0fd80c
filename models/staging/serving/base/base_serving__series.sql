{#- spark target: a table rebuilt from every file each run (delete+insert is DuckDB's; merge needs Delta) -#}
{{ config(
    materialized='incremental' if target.type != 'spark' else 'table',
    unique_key='source_file',
    incremental_strategy='delete+insert',
    on_schema_change='fail',
    post_hook="{{ remove_unlanded_prometheus_files('metrics/serving') }}",
) }}

-- Serving engines' counters (vLLM, TGI, Triton) landed by `gpucost collect --serving` under
-- metrics/serving/<cluster>/<day>/<metric>.json (or exposition text / OpenMetrics, read_prometheus_series):
-- one row per file and series, the labels parsed once, the valid samples as typed lists and the rejected
-- ones with their reason (rpt_quarantine lists them). A file with no series is not quarantined when the
-- response is simply empty (an engine that does not run in a cluster that day); any other file-level
-- problem keeps one row with the reason (is_file_without_series). Incremental over files, as base_dcgm__series: a
-- run reads only the files not loaded yet or re-delivered since; a file gone from the landing zone leaves a
-- tombstone row (no size, no samples).
-- struct fields (`sample.sampled_epoch`) read to sqlfluff as table qualifiers:
-- noqa: disable=RF03
{%- set series_columns -%}
    source_file, source_file_size, source_file_modified_at, metric_name, cluster_id, namespace, pod, container, engine,
        model_name, model_version, series_id, is_file_without_series, series_quarantine_reason
{%- endset %}
{%- set serving_sample_check -%}
    case
                    when series_quarantine_reason is not null then series_quarantine_reason
                    when
                        sample.sample_value is null or {{ is_not_finite('sample.sample_value') }}
                        then 'non-numeric sample value: ' || coalesce(sample.sample_value_raw, '<null>')
                    when
                        sample.sampled_epoch < {{ var('gpucost_min_epoch') }}
                        or sample.sampled_epoch > {{ var('gpucost_max_epoch') }}
                        then 'timestamp out of range: ' || cast(sample.sampled_epoch as string)
                    when sample.sample_value < 0 then 'negative counter value: ' || sample.sample_value_raw
                end
{%- endset %}
with

source as (

    {{ read_prometheus_series(prometheus_files_to_load('metrics/serving')) }}

),

labelled as (

    select
        filename as source_file,
        source_file_size,
        source_file_modified_at,
        {{ prom_label('__name__') }} as metric_name,
        {{ prom_cluster('metrics/serving') }} as cluster_id,
        {{ prom_workload_label('namespace') }} as namespace,
        {{ prom_workload_label('pod') }} as pod,
        {{ prom_workload_label('container') }} as container,
        case
            when {{ prom_label('__name__') }} like 'vllm:%' then 'vllm'
            when {{ prom_label('__name__') }} like 'tgi\_%' escape '\' then 'tgi'
            when {{ prom_label('__name__') }} like 'nv\_inference\_%' escape '\' then 'triton'
        end as engine,
        -- vLLM: model_name (--served-model-name); Triton: model and version; TGI exports no model label
        -- (a relabelling rule may add model_name)
        coalesce({{ prom_label('model_name') }}, {{ prom_label('model') }}) as model_name,
        {{ prom_label('version') }} as model_version,
        -- the series: its full label set, in label order, and the cluster
        md5(
            coalesce({{ prom_cluster('metrics/serving') }}, '') || '|'
            || array_to_string(
                {{ list_sorted(list_map('map_keys(labels)', 'label_key', "label_key || '=' || labels[label_key]")) }},
                ','
            )
        ) as series_id,
        labels is null as is_file_without_series,
        file_quarantine_reason,
        samples
    from source

),

series_checked as (

    select
        source_file,
        source_file_size,
        source_file_modified_at,
        metric_name,
        cluster_id,
        namespace,
        pod,
        container,
        engine,
        model_name,
        model_version,
        series_id,
        is_file_without_series,
        case
            -- an empty response is an engine not running in that cluster that day, not a problem
            when is_file_without_series and file_quarantine_reason = 'no series in the response' then null
            when is_file_without_series then file_quarantine_reason
            when engine is null then 'not a serving counter: ' || coalesce(metric_name, '<no __name__>')
            when pod is null then 'serving series without a pod label (the scrape did not attach the pod)'
        end as series_quarantine_reason,
        {{ list_map('coalesce(samples, ' ~ array_of([]) ~ ')', 'sample', struct_of([
            ('sampled_epoch', 'cast(round(cast(' ~ list_item('sample', 1) ~ ' as double)) as bigint)'),
            ('sample_value', 'try_cast(' ~ list_item('sample', 2) ~ ' as double)'),
            ('sample_value_raw', list_item('sample', 2)),
        ])) }} as parsed_samples
    from labelled

),

samples_checked as (

    select
        {{ series_columns }},
        {{ list_map('parsed_samples', 'sample', struct_of([
            ('sampled_epoch', 'sample.sampled_epoch'),
            ('sample_value', 'sample.sample_value'),
            ('sample_value_raw', 'sample.sample_value_raw'),
            ('quarantine_reason', serving_sample_check),
        ])) }} as checked_samples
    from series_checked

),

split as (

    select
        {{ series_columns }},
        {{ list_where('checked_samples', 'sample', 'sample.quarantine_reason is null') }} as valid_samples,
        case
            when is_file_without_series and series_quarantine_reason is not null
                then {{ array_of([struct_of([
                    ('sampled_epoch', 'cast(null as bigint)'),
                    ('sample_value', 'cast(null as double)'),
                    ('sample_value_raw', 'cast(null as string)'),
                    ('quarantine_reason', 'series_quarantine_reason'),
                ])]) }}
            else {{ list_where('checked_samples', 'sample', 'sample.quarantine_reason is not null') }}
        end as quarantined_samples
    from samples_checked

),

final as (

    select
        source_file,
        source_file_size,
        source_file_modified_at,
        cast('{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}' as timestamp) as loaded_at,
        is_file_without_series,
        metric_name,
        cluster_id,
        namespace,
        pod,
        container,
        engine,
        model_name,
        model_version,
        series_id,
        series_quarantine_reason,
        cast({{ list_size('valid_samples') }} as bigint) as sample_count,
        {{ list_min(list_map('valid_samples', 'sample', 'sample.sampled_epoch')) }} as first_sampled_epoch,
        {{ list_max(list_map('valid_samples', 'sample', 'sample.sampled_epoch')) }} as last_sampled_epoch,
        {{ list_map('valid_samples', 'sample', 'sample.sampled_epoch') }} as sampled_epochs,
        {{ list_map('valid_samples', 'sample', 'sample.sample_value_raw') }} as sample_values_raw,
        {{ list_map('quarantined_samples', 'sample', struct_of([
            ('sampled_epoch', 'sample.sampled_epoch'),
            ('sample_value_raw', 'sample.sample_value_raw'),
            ('quarantine_reason', 'sample.quarantine_reason'),
        ])) }} as quarantined_samples
    from split

)

select * from final
