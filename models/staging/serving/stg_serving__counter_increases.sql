-- The serving engines' counters as increases per series and hour, as Prometheus' increase() counts them
-- (without its extrapolation to the window's edges): the sum of the rises between consecutive samples of
-- a series, a fall counting as a reset (the container restarted and the counter began again from zero,
-- so the new value is the rise since). A series' first sample has nothing before it and adds nothing.
-- A rise belongs to the hour in which it happened: with raw samples, the hour of the second before the
-- later sample (a sample at 10:00 closes 09:55-10:00); with hourly aggregates (`gpucost collect
-- --resolution hourly`: the counter's last value in the hour, stamped at the hour's start), the hour of
-- the later aggregate. Only the counters listed in `measure` are read; a sample landed twice counts once.
-- Incremental (macros/counter_increases_incremental.sql): a run recomputes every series' hours from the hour of
-- the first rise the counter files loaded since bring; everything when a landed file was removed.
-- `dbt build --full-refresh` recomputes everything.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='append_new_columns',
    pre_hook="{{ delete_counter_hours_to_recompute() }}",
) }}

{%- set plan = counter_increases_plan() %}
{%- set window = not plan.full %}
with

series as (

    select * from {{ ref('base_serving__series') }}
    where {{ is_serving_counter_series() }}

),
{%- if window %}

-- the rows holding the samples of the hours recomputed, and each series' sample before them: the newest sample
-- of the rows that end before (every copy of it), or a sample of a row holding both
read_series as (

    select * from series
    where {{ counter_hours_recomputed(plan, 'last_sampled_epoch') }}
    {%- if plan.from_hour is not none %}
    union all
    select * from series
    where not ({{ counter_hours_recomputed(plan, 'last_sampled_epoch') }})
    qualify last_sampled_epoch = max(last_sampled_epoch) over (partition by series_id)
    {%- endif %}

),
{%- endif %}

samples as (

    select
        series_id,
        cluster_id,
        namespace,
        pod,
        container,
        engine,
        metric_name,
        model_name,
        model_version,
        {{ unnest_zip([('sampled_epochs', 'sampled_epoch'), ('sample_values_raw', 'sample_value_raw')]) }}
    from {{ 'read_series' if window else 'series' }}

),

deduplicated as (

    select
        series_id,
        cluster_id,
        namespace,
        pod,
        container,
        engine,
        metric_name,
        model_name,
        model_version,
        sampled_epoch,
        max(coalesce(
            try_cast(sample_value_raw as decimal(38, 6)),
            cast(try_cast(sample_value_raw as double) as decimal(38, 6))
        )) as counter_value
    from samples
    group by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10

),

previous as (

    select
        *,
        lag(counter_value) over (partition by series_id order by sampled_epoch) as previous_value
    from deduplicated

),

rises as (

    select
        *,
        case
            when counter_value >= previous_value then counter_value - previous_value
            else counter_value
        end as counter_rise,
        counter_value < previous_value as is_reset,
        {{ epoch_hour_floor(counter_rise_epoch('sampled_epoch')) }} as hour_epoch
    from previous
    -- a series' first sample: nothing before it to rise from
    where previous_value is not null

),

hourly as (

    select
        series_id,
        cluster_id,
        namespace,
        pod,
        container,
        engine,
        metric_name,
        model_name,
        model_version,
        hour_epoch,
        sum(counter_rise) as counter_increase,
        count(*) as sample_count,
        sum(case when is_reset then 1 else 0 end) as reset_count
    from rises
    where {{ counter_hours_recomputed(plan, 'hour_epoch') }}
    group by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10

),

final as (

    select
        md5(series_id || '|' || cast(hour_epoch as string)) as counter_increase_id,
        series_id,
        {{ workload_id('cluster_id', 'namespace', 'pod') }} as pod_key,
        cluster_id,
        namespace,
        pod,
        container,
        engine,
        metric_name,
        case
            when metric_name in ('vllm:prompt_tokens_total', 'tgi_request_input_length_sum') then 'prompt_tokens'
            when metric_name in ('vllm:generation_tokens_total', 'tgi_request_generated_tokens_sum')
                then 'generation_tokens'
            when metric_name in ('vllm:request_success_total', 'tgi_request_success', 'nv_inference_request_success')
                then 'requests_succeeded'
            when metric_name = 'nv_inference_request_failure' then 'requests_failed'
            when metric_name = 'tgi_request_count' then 'requests_received'
            when metric_name = 'nv_inference_count' then 'inferences'
        end as measure,
        model_name,
        model_version,
        counter_increase,
        cast(sample_count as bigint) as sample_count,
        cast(reset_count as bigint) as reset_count,
        cast({{ from_epoch_seconds('hour_epoch') }} as date) as usage_date,
        {{ from_epoch_seconds('hour_epoch') }} as usage_hour_at,
        {{ telemetry_loaded_through(['base_serving__series']) }} as inputs_loaded_at
    from hourly

)

select * from final
