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

{#- What a run of stg_serving__counter_increases recomputes (telemetry_time_plan): every series' hours from the hour
    of the first rise the counter files loaded since bring. -#}
{% macro counter_increases_plan() -%}
    {{ return(telemetry_time_plan('base_serving__series', epoch_hour_floor(counter_rise_epoch(
        'min(first_sampled_epoch) filter (where ' ~ is_serving_counter_series() ~ ')'
    )))) }}
{%- endmacro %}

{#- The hours a plan recomputes (epochs_recomputed; `hour` in epoch seconds, or else a timestamp). -#}
{% macro counter_hours_recomputed(plan, hour, epoch=true) -%}
    {%- if epoch or plan.full or plan.from is none -%}
    {{ epochs_recomputed(plan, hour) }}
    {%- else -%}
    {{ hour }} >= {{ from_epoch_seconds(plan.from) }}
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
