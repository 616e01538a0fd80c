{#- The telemetry's resolution. `gpucost collect --resolution hourly` lands one aggregate per series and hour
    (stamped at the hour's start) in the same layout as raw samples, and marks its DCGM folders with a
    gpucost_dcgm_sample_seconds_1h file: the seconds each DCGM series was scraped in the hour. A landing zone
    holds one resolution (docs/collecting.md). Known at compile time, the same for every model. -#}
{% macro is_hourly_landing() -%}
    {{ return(landing_files('metrics/dcgm/*/*/gpucost_dcgm_sample_seconds_1h.json') | length > 0) }}
{%- endmacro %}

{#- The longest gap between two samples of a series that is not lost telemetry: var
    gpucost_max_sample_gap_seconds, and at least the hour between two hourly aggregates. -#}
{% macro max_sample_gap_seconds() -%}
    {%- if is_hourly_landing() -%}
        {{ return([var('gpucost_max_sample_gap_seconds'), 3600] | max) }}
    {%- endif -%}
    {{ return(var('gpucost_max_sample_gap_seconds')) }}
{%- endmacro %}
