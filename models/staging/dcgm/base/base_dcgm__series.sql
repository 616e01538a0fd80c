{#- spark target: a table rebuilt from every file each run (delete+insert is DuckDB's; merge needs Delta) -#}
{{ config(
    materialized='incremental' if target.type != 'spark' else 'table',
    unique_key='source_file',
    incremental_strategy='delete+insert',
    on_schema_change='fail',
    post_hook="{{ remove_unlanded_prometheus_files('metrics/dcgm') }}",
) }}

-- DCGM exporter series scraped into Prometheus, landed as query_range / instant-query JSON, exposition text or
-- OpenMetrics (read_prometheus_series): one row per file and series,
-- the labels parsed once per series, the samples as typed lists. Incremental over files: a run reads only
-- the files not loaded yet or re-delivered since (prometheus_files_to_load); a file gone from the landing
-- zone leaves only a tombstone row (post-hook). `--full-refresh` reads everything again.
-- Valid samples are in sampled_epochs / sample_values; the others, each with the reason, in
-- quarantined_samples (rpt_quarantine lists them). A file that yields no series keeps one row
-- (is_file_without_series) whose quarantined_samples hold the file's reason.
-- Labels as real exporters write them: exported_pod / exported_namespace / exported_container win over the
-- scrape target's pod / namespace / container, the exporter's own pod is no workload, pod_uid names the
-- incarnation, a Hostname that is a container id gives way to the node / instance labels
-- (macros/prometheus.sql).
-- struct fields (`sample.sampled_epoch`) read to sqlfluff as table qualifiers:
-- noqa: disable=RF03
{%- set series_columns -%}
    source_file, source_file_size, source_file_modified_at, metric_name, cluster_id, node_name, gpu_uuid, gpu_index,
        gpu_model, namespace, pod, container, pod_uid, gpu_instance_id, gpu_instance_profile, hpc_job,
        is_file_without_series, series_quarantine_reason
{%- endset %}
{%- set dcgm_sample_check -%}
    case
                    when series_quarantine_reason is not null then series_quarantine_reason
                    when
                        sample.sample_value is null or {{ is_not_finite('sample.sample_value') }}
                        then 'non-numeric sample value: ' || coalesce(sample.sample_value_raw, '<null>')
                    when
                        sample.sampled_epoch < {{ var('gpucost_min_epoch') }}
                        or sample.sampled_epoch > {{ var('gpucost_max_epoch') }}
                        then 'timestamp out of range: ' || cast(sample.sampled_epoch as string)
                    when sample.sample_value < 0 then 'negative value: ' || sample.sample_value_raw
                    when metric_name = 'DCGM_FI_DEV_GPU_UTIL' and sample.sample_value > 100
                        then 'GPU_UTIL above 100: ' || sample.sample_value_raw
                    when metric_name = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' and sample.sample_value > 1
                        then 'PROF_GR_ENGINE_ACTIVE above 1: ' || sample.sample_value_raw
                end
{%- endset %}
with

source as (

    {{ read_prometheus_series(prometheus_files_to_load('metrics/dcgm')) }}

),

labelled as (

    select
        filename as source_file,
        source_file_size,
        source_file_modified_at,
        {{ prom_label('__name__') }} as metric_name,
        {{ prom_cluster('metrics/dcgm') }} as cluster_id,
        {{ prom_node_name() }} as node_name,
        coalesce({{ prom_label('Hostname') }}, {{ prom_label('hostname') }}) as hostname_label,
        {{ prom_label('UUID') }} as gpu_uuid,
        {{ prom_label('gpu') }} as gpu_index,
        {{ prom_label('modelName') }} as gpu_model,
        {{ prom_workload_label('namespace') }} as namespace,
        {{ prom_workload_label('pod') }} as pod,
        {{ prom_workload_label('container') }} as container,
        {{ prom_workload_label('pod_uid') }} as pod_uid,
        -- MIG: the GPU instance a series is about (dcgm-exporter labels GPU_I_ID / GPU_I_PROFILE)
        {{ prom_label('GPU_I_ID') }} as gpu_instance_id,
        {{ prom_label('GPU_I_PROFILE') }} as gpu_instance_profile,
        -- HPC: the Slurm job id dcgm-exporter's --hpc-job-mapping-dir attaches to a GPU
        {{ prom_label('hpc_job') }} as hpc_job,
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
        node_name,
        gpu_uuid,
        gpu_index,
        gpu_model,
        namespace,
        pod,
        container,
        pod_uid,
        gpu_instance_id,
        gpu_instance_profile,
        hpc_job,
        is_file_without_series,
        case
            when is_file_without_series then file_quarantine_reason
            when gpu_uuid is null then 'GPU series without a UUID label'
            when node_name is null and hostname_label is not null
                then
                    'Hostname ' || hostname_label || ' is a container id (dcgm-exporter in Docker) and no'
                    || ' node / kubernetes_node / instance label names the node'
            when node_name is null then 'GPU series with no node (no Hostname / hostname label)'
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
            ('quarantine_reason', dcgm_sample_check),
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
        node_name,
        gpu_uuid,
        gpu_index,
        gpu_model,
        namespace,
        pod,
        container,
        pod_uid,
        gpu_instance_id,
        gpu_instance_profile,
        hpc_job,
        series_quarantine_reason,
        cast({{ list_size('valid_samples') }} as bigint) as sample_count,
        {{ list_min(list_map('valid_samples', 'sample', 'sample.sampled_epoch')) }} as first_sampled_epoch,
        {{ list_max(list_map('valid_samples', 'sample', 'sample.sampled_epoch')) }} as last_sampled_epoch,
        {{ list_map('valid_samples', 'sample', 'sample.sampled_epoch') }} as sampled_epochs,
        -- the distinct UTC hours of the valid samples (epoch seconds, in order: the same list on every engine),
        -- computed once per landed file for stg_dcgm__telemetry_hours instead of over every sample in each of its reads
        {{ list_sorted(list_unique(list_map('valid_samples', 'sample', epoch_hour_floor('sample.sampled_epoch')))) }}
            as sampled_hours,
        {{ list_map('valid_samples', 'sample', 'sample.sample_value') }} as sample_values,
        {{ list_map('quarantined_samples', 'sample', struct_of([
            ('sampled_epoch', 'sample.sampled_epoch'),
            ('sample_value', 'sample.sample_value'),
            ('sample_value_raw', 'sample.sample_value_raw'),
            ('quarantine_reason', 'sample.quarantine_reason'),
        ])) }} as quarantined_samples
    from split

)

select * from final
