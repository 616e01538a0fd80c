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

{#- int_gpu_usage_hourly's hours from the cutoff on (usage_hourly_cutoff), as chunks of whole hours:
    a list of [since, until] epochs (until none: every hour after since), the first from the cutoff, the last
    open-ended. As many chunks of equal hours as the DCGM samples from the cutoff on need at var
    gpucost_usage_samples_per_chunk each (series with samples there, counted by base_dcgm__series'
    sample_count). One chunk when the var is null, on Spark, and before base_dcgm__series exists. -#}
{% macro usage_hour_chunks(log_progress=false) -%}
    {%- set cutoff = usage_hourly_cutoff() -%}
    {%- set per_chunk = var('gpucost_usage_samples_per_chunk', none) -%}
    {%- set series = ref('base_dcgm__series') -%}
    {%- if not execute or target.type == 'spark' or per_chunk is none or load_relation(series) is none -%}
        {{ return([[cutoff, none]]) }}
    {%- endif -%}
    {%- set extent_query -%}
        select
            cast(coalesce(sum(sample_count), 0) as bigint),
            cast({{ epoch_hour_floor('greatest(min(first_sampled_epoch), ' ~ cutoff ~ ')') }} as bigint),
            cast({{ epoch_hour_floor('max(last_sampled_epoch)') }} as bigint)
        from {{ series }}
        where sample_count > 0 and last_sampled_epoch >= {{ cutoff }}
    {%- endset -%}
    {%- set extent = run_query(extent_query).rows[0] -%}
    {%- set samples = extent[0] | int -%}
    {%- set count = (samples / (per_chunk | int)) | round(0, 'ceil') | int -%}
    {%- if count <= 1 or extent[1] is none -%}
        {{ return([[cutoff, none]]) }}
    {%- endif -%}
    {%- set first_hour = extent[1] | int -%}
    {%- set hours = ((extent[2] | int) - first_hour) // 3600 + 1 -%}
    {%- set step = ((hours / count) | round(0, 'ceil') | int) * 3600 -%}
    {%- set chunks = [] -%}
    {%- for start in range(first_hour, first_hour + hours * 3600, step) -%}
        {%- do chunks.append([cutoff if loop.first else start, none if loop.last else start + step]) -%}
    {%- endfor -%}
    {%- if log_progress -%}
        {%- do log(this.identifier ~ ": " ~ "{:,}".format(samples) ~ " DCGM samples in " ~ chunks | length
            ~ " chunks of " ~ step // 3600 ~ " h (var gpucost_usage_samples_per_chunk: "
            ~ "{:,}".format(per_chunk | int) ~ ")", info=true) -%}
    {%- endif -%}
    {{ return(chunks) }}
{%- endmacro %}

{#- The table of int_gpu_usage_hourly's chunks after the first (usage_hour_chunks), beside it. -#}
{% macro later_usage_chunks_relation() -%}
    {{ return(this.incorporate(path={'identifier': this.identifier ~ '__later_chunks'})) }}
{%- endmacro %}

{#- pre-hook of int_gpu_usage_hourly (before delete_usage_hours_to_recompute: the plan reads the table as it
    was): its chunks after the first, the model's SQL being the first, as rows of a table beside it for the
    post-hook (insert_later_usage_chunks) to build once the first chunk is in. No table with one chunk. -#}
{% macro write_later_usage_chunks() -%}
    {%- if target.type == 'spark' -%}{{ return('select 1') }}{%- endif -%}
    {%- set chunks = usage_hour_chunks(log_progress=true) -%}
    {%- set plan = later_usage_chunks_relation() -%}
    {%- if chunks | length <= 1 -%}
        drop table if exists {{ plan }}
    {%- else -%}
        create or replace table {{ plan }} as
        select * from (values
            {%- for chunk in chunks[1:] %}
            ({{ loop.index + 1 }}, {{ chunk[0] }}, {{ chunk[1] if chunk[1] is not none else 'null' }})
            {{- ',' if not loop.last }}
            {%- endfor %}
        ) as chunks (chunk_number, since_epoch, until_epoch)
    {%- endif -%}
{%- endmacro %}

{#- post-hook of int_gpu_usage_hourly: inserts the hours of each chunk the pre-hook planned after the first
    (gpu_usage_hours), one chunk at a time, logging each, then drops the plan. -#}
{% macro insert_later_usage_chunks() -%}
    {%- if not execute or target.type == 'spark' -%}{{ return('select 1') }}{%- endif -%}
    {%- set plan = later_usage_chunks_relation() -%}
    {#- information_schema, not adapter.get_relation: dbt's relation cache does not see the pre-hook's table -#}
    {%- set found_query -%}
        select count(*) from information_schema.tables
        where table_catalog = '{{ plan.database }}' and table_schema = '{{ plan.schema }}'
            and table_name = '{{ plan.identifier }}'
    {%- endset -%}
    {%- if run_query(found_query).columns[0].values()[0] == 0 -%}{{ return('select 1') }}{%- endif -%}
    {%- set chunks = run_query(
        'select chunk_number, since_epoch, until_epoch from ' ~ plan ~ ' order by chunk_number'
    ).rows -%}
    {%- for chunk in chunks -%}
        {%- set until = chunk[2] | int if chunk[2] is not none else none -%}
        {%- set since = modules.datetime.datetime.fromtimestamp(chunk[1] | int, modules.pytz.utc) -%}
        {%- do log(this.identifier ~ ": chunk " ~ chunk[0] ~ " of " ~ (chunks | length + 1) ~ " (hours from "
            ~ since.strftime('%Y-%m-%dT%H:%MZ') ~ ")", info=true) -%}
        {%- do run_query(
            'insert into ' ~ this ~ ' by name select * from (' ~ gpu_usage_hours(chunk[1] | int, until) ~ ') as chunk'
        ) -%}
    {%- endfor -%}
    drop table if exists {{ plan }}
{%- endmacro %}
