{#- The time each telemetry sample stands for, for one kind of series (called by the table
    int_telemetry_sample_intervals, for a GPU slot's samples, a pod container's GPU requests, a pod container's CPU
    and memory requests): a select of `samples`' columns plus
      gap_seconds      the gap to the series' next sample (null for its last),
      step_seconds     the series' step,
      duration_seconds sample_duration(gap, step): the gap, or the series' step when the gap is missing or
                       longer than gpucost_max_sample_gap_seconds (telemetry lost is not usage).
    A series' step is its shortest positive gap. `series`: the columns naming a series (null-safe match);
    `steps_from`: where to read the steps from when `samples` holds only part of each series (an incremental
    window, a filter), so that a series with one sample left in it does not fall back to the default step;
    it must have the `series` columns and sampled_epoch. -#}
{% macro sample_intervals(samples, series, steps_from=none) -%}
    {%- set partition = series | join(', ') -%}
    {%- set sample_gaps -%}
        select
            {{ samples }}.*,
            lead({{ samples }}.sampled_epoch) over (
                partition by {{ partition }} order by {{ samples }}.sampled_epoch
            ) - {{ samples }}.sampled_epoch as gap_seconds
        from {{ samples }}
    {%- endset -%}
    {%- if steps_from is none %}
    {#- the steps from the same gaps: one window over each series, then its shortest positive gap over the
        same partition (no second pass over the samples, no join back) -#}
    select
        sample_gaps.*,
        {{ sample_duration('sample_gaps.gap_seconds', 'sample_gaps.step_seconds') }} as duration_seconds
    from (
        select
            gaps.*,
            min(case when gaps.gap_seconds > 0 then gaps.gap_seconds end) over (
                partition by {{ partition }}
            ) as step_seconds
        from (
        {{ sample_gaps }}
        ) as gaps
    ) as sample_gaps
    {%- else %}
    select
        sample_gaps.*,
        series_steps.step_seconds,
        {{ sample_duration('sample_gaps.gap_seconds', 'series_steps.step_seconds') }} as duration_seconds
    from (
        {{ sample_gaps }}
    ) as sample_gaps
    inner join (
        select
            {{ partition }},
            min(case when gap_seconds > 0 then gap_seconds end) as step_seconds
        from (
            select
                {{ partition }},
                lead(sampled_epoch) over (partition by {{ partition }} order by sampled_epoch)
                - sampled_epoch as gap_seconds
            from {{ steps_from }}
        ) as series_gaps
        group by {{ partition }}
    ) as series_steps
        on
        {%- for column in series %}
        {{ 'and ' if not loop.first }}sample_gaps.{{ column }} is not distinct from series_steps.{{ column }}
        {%- endfor %}
    {%- endif %}
{%- endmacro %}
