{#- spark target: a table rebuilt from every file each run (delete+insert is DuckDB's; merge needs Delta) -#}
{{ config(
    materialized='incremental' if target.type != 'spark' else 'table',
    unique_key='source_file',
    incremental_strategy='delete+insert',
    on_schema_change='fail',
    post_hook="{{ remove_unlanded_prometheus_files('metrics/kube') }}",
) }}

-- kube-state-metrics series scraped into Prometheus, landed as query_range JSON: one row per file and
-- series with its labels and what staging needs of its valid samples (count, first and last time, the
-- largest value). The samples themselves are kept (typed lists) only for the series whose every sample
-- matters (kube_metrics_with_samples: resource requests, pod volume mounts). Incremental over files like
-- base_dcgm__series; a file that yields no series keeps one row whose quarantined_samples hold the reason.
-- struct fields (`sample.sampled_epoch`) read to sqlfluff as table qualifiers:
-- noqa: disable=RF03
{%- set series_columns -%}
    source_file, source_file_size, source_file_modified_at, metric_name, cluster_id, labels, is_file_without_series,
        file_quarantine_reason
{%- endset %}
{%- set kube_sample_check -%}
    case
                    when
                        sample.sample_value is null or {{ is_not_finite('sample.sample_value') }}
                        then 'non-numeric sample value: ' || coalesce(sample.sample_value_raw, '<null>')
                    when sample.sample_value < 0 then 'negative value: ' || sample.sample_value_raw
                    when
                        sample.sampled_epoch < {{ var('gpucost_min_epoch') }}
                        or sample.sampled_epoch > {{ var('gpucost_max_epoch') }}
                        then 'timestamp out of range: ' || cast(sample.sampled_epoch as string)
                end
{%- endset %}
with

source as (

    {{ read_prometheus_series(prometheus_files_to_load('metrics/kube')) }}

),

labelled as (

    select
        filename as source_file,
        source_file_size,
        source_file_modified_at,
        {{ prom_label('__name__') }} as metric_name,
        {{ prom_cluster('metrics/kube') }} as cluster_id,
        -- exported_pod / exported_namespace / exported_container (honorLabels: false) are the series' own
        {{ prom_labels_honouring_exported('labels') }} as labels,
        labels is null as is_file_without_series,
        file_quarantine_reason,
        {{ list_map('coalesce(samples, ' ~ array_of([]) ~ ')', 'sample', struct_of([
            ('sampled_epoch', 'cast(round(cast(' ~ list_item('sample', 1) ~ ' as double)) as bigint)'),
            ('sample_value', 'try_cast(' ~ list_item('sample', 2) ~ ' as double)'),
            ('sample_value_raw', list_item('sample', 2)),
        ])) }} as parsed_samples
    from source

),

samples_checked as (

    select
        {{ series_columns }},
        {{ list_map('parsed_samples', 'sample', struct_of([
            ('sampled_epoch', 'sample.sampled_epoch'),
            ('sample_value', 'sample.sample_value'),
            ('sample_value_raw', 'sample.sample_value_raw'),
            ('quarantine_reason', kube_sample_check),
        ])) }} as checked_samples
    from labelled

),

split as (

    select
        {{ series_columns }},
        {{ list_where('checked_samples', 'sample', 'sample.quarantine_reason is null') }} as valid_samples,
        case
            when file_quarantine_reason is not null
                then {{ array_of([struct_of([
                    ('sampled_epoch', 'cast(null as bigint)'),
                    ('sample_value', 'cast(null as double)'),
                    ('sample_value_raw', 'cast(null as string)'),
                    ('quarantine_reason', 'file_quarantine_reason'),
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
        labels,
        cast({{ list_size('valid_samples') }} as bigint) as sample_count,
        {{ list_min(list_map('valid_samples', 'sample', 'sample.sampled_epoch')) }} as first_sampled_epoch,
        {{ list_max(list_map('valid_samples', 'sample', 'sample.sampled_epoch')) }} as last_sampled_epoch,
        {{ list_max(list_map('valid_samples', 'sample', 'sample.sample_value')) }} as max_sample_value,
        case
            when metric_name in ({{ kube_metrics_with_samples() }})
                then {{ list_map('valid_samples', 'sample', 'sample.sampled_epoch') }}
        end as sampled_epochs,
        case
            when metric_name in ({{ kube_metrics_with_samples() }})
                then {{ list_map('valid_samples', 'sample', 'sample.sample_value') }}
        end as sample_values,
        {{ list_map('quarantined_samples', 'sample', struct_of([
            ('sampled_epoch', 'sample.sampled_epoch'),
            ('sample_value_raw', 'sample.sample_value_raw'),
            ('quarantine_reason', 'sample.quarantine_reason'),
        ])) }} as quarantined_samples
    from split

)

select * from final
