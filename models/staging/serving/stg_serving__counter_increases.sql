-- The serving engines' counters as increases per series and hour, as Prometheus' increase() counts them
-- (without its extrapolation to the window's edges): the sum of the rises between consecutive samples of
-- a series, a fall counting as a reset (the container restarted and the counter began again from zero,
-- so the new value is the rise since). A series' first sample has nothing before it and adds nothing.
-- A rise belongs to the hour in which it happened: with raw samples, the hour of the second before the
-- later sample (a sample at 10:00 closes 09:55-10:00); with hourly aggregates (`gpucost collect
-- --resolution hourly`: the counter's last value in the hour, stamped at the hour's start), the hour of
-- the later aggregate. Only the counters listed in `measure` are read; a sample landed twice counts once.
{#- the second a rise is dated by: raw samples, the second before the later sample; hourly aggregates (stamped
    at their hour's start), the aggregate's own -#}
{%- set rise_epoch = 'sampled_epoch' if is_hourly_landing() else '(sampled_epoch - 1)' %}
{%- set counters = [
    'vllm:prompt_tokens_total', 'vllm:generation_tokens_total', 'vllm:request_success_total',
    'tgi_request_count', 'tgi_request_success', 'tgi_request_input_length_sum', 'tgi_request_generated_tokens_sum',
    'nv_inference_request_success', 'nv_inference_request_failure', 'nv_inference_count',
] %}
with

series as (

    select * from {{ ref('base_serving__series') }}
    where sample_count > 0 and series_quarantine_reason is null

),

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
    from series
    where metric_name in ('{{ counters | join("', '") }}')

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
        {{ rise_epoch }} - {{ rise_epoch }} % 3600 as hour_epoch
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
        {{ from_epoch_seconds('hour_epoch') }} as usage_hour_at
    from hourly

)

select * from final
