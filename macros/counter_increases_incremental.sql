{#- stg_serving__counter_increases, incremental. Every row keeps inputs_loaded_at: the newest loaded_at of
    base_serving__series when it was computed. A run reads the counter series that table loaded after the table's
    newest inputs_loaded_at (whichever invocation loaded them) and recomputes every series' hours from the hour
    of the first new rise on (counter_increases_plan): a new sample changes its own rise and its successor's, both
    dated at or after its own. Everything when the table predates the column, or when a landed file was removed
    since (a tombstone row). A re-delivered file is recomputed from its new first sample, as the other telemetry
    models recompute it: hours only an earlier delivery held samples for before that keep their rows until
    `--full-refresh`. -#}

{#- The serving engines' counters the model reads (the rest of base_serving__series are gauges or histograms). -#}
{% macro serving_counters() -%}
    {{ return([
        'vllm:prompt_tokens_total', 'vllm:generation_tokens_total', 'vllm:request_success_total',
        'tgi_request_count', 'tgi_request_success', 'tgi_request_input_length_sum', 'tgi_request_generated_tokens_sum',
        'nv_inference_request_success', 'nv_inference_request_failure', 'nv_inference_count',
    ]) }}
{%- endmacro %}

{#- The base_serving__series rows the counters are read from: a known counter's series with valid samples. -#}
{% macro is_serving_counter_series() -%}
    sample_count > 0 and series_quarantine_reason is null and metric_name in {{ quote_text_tuple(serving_counters()) }}
{%- endmacro %}

{#- The second a counter's rise is dated by, from the later of its two samples: raw samples, the second before
    it (a sample at 10:00 closes 09:55-10:00); hourly aggregates (stamped at their hour's start), its own. -#}
{% macro counter_rise_epoch(sampled_epoch) -%}
    {{ sampled_epoch if is_hourly_landing() else '(' ~ sampled_epoch ~ ' - 1)' }}
{%- endmacro %}

{#- What a run of stg_serving__counter_increases recomputes: {full: true} (everything), or {full: false, from_hour:
    the first hour recomputed (epoch seconds), or none when no counter sample was loaded since}. -#}
{% macro counter_increases_plan() -%}
    {%- set plan = {'full': true, 'from_hour': none} -%}
    {%- set serving = ref('base_serving__series') -%}
    {%- if not (is_incremental() and execute) -%}{{ return(plan) }}{%- endif -%}
    {%- set watermark = telemetry_watermark(this) -%}
    {%- if watermark is none -%}{{ return(plan) }}{%- endif -%}
    {%- set changes = run_query(
        "select count(*) filter (where source_file_size is null), "
        ~ epoch_hour_floor(counter_rise_epoch('min(first_sampled_epoch) filter (where '
            ~ is_serving_counter_series() ~ ')'))
        ~ " from " ~ serving ~ " where loaded_at > cast('" ~ watermark ~ "' as timestamp)"
    ) -%}
    {%- if changes.columns[0].values()[0] > 0 -%}{{ return(plan) }}{%- endif -%}
    {%- do plan.update({'full': false, 'from_hour': changes.columns[1].values()[0]}) -%}
    {{ return(plan) }}
{%- endmacro %}

{#- The hours a plan recomputes (a condition on an hour's start, `hour` in epoch seconds or else a timestamp): every
    one, those from its from_hour on, or none. -#}
{% macro counter_hours_recomputed(plan, hour, epoch=true) -%}
    {%- if plan.full -%}
    true
    {%- elif plan.from_hour is not none -%}
    {{ hour }} >= {{ plan.from_hour if epoch else from_epoch_seconds(plan.from_hour) }}
    {%- else -%}
    false
    {%- endif -%}
{%- endmacro %}

{#- pre-hook: an incremental run first deletes the hours it recomputes. -#}
{% macro delete_counter_hours_to_recompute() -%}
    {%- if is_incremental() -%}
    delete from {{ this }}
    where {{ counter_hours_recomputed(counter_increases_plan(), 'usage_hour_at', epoch=false) }}
    {%- else -%}
    select 1
    {%- endif -%}
{%- endmacro %}
