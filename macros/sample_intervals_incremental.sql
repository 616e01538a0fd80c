{#- int_telemetry_sample_intervals, incremental. Every row keeps inputs_loaded_at: the newest loaded_at of the
    telemetry staging tables (base_dcgm__series, base_kube__series) when it was computed. A run reads what those
    tables loaded after the table's newest inputs_loaded_at (a file new or re-delivered since, in this
    invocation or an earlier one) and recomputes:
      - GPU slots, and CPU / memory requests (windowed_interval_kinds): every row from the first sample time of
        those files on (the DCGM files for the slots, the kube request samples for the requests: cutoffs). A
        series' last row before it gets its new gap, and a series whose step (shortest positive gap) got shorter
        gets the new step on every row (post-hook). Samples before that time are unchanged, so are their gaps.
      - GPU requests: every series of each workload those kube files hold requests of (request_workloads), from
        all of its samples (a GPU request's step also counts the samples taken before the pod had a node, which
        the table does not hold).
    Everything (full) when the table predates these columns, or when a landed file was removed since (a
    tombstone row: samples went, so a gap may have grown anywhere). A re-delivered file is recomputed from its
    new first sample, as int_gpu_usage_hourly recomputes it: samples only an earlier delivery held before that
    keep their rows until `--full-refresh`.
    Found before the model runs; returns {full, cutoffs: {kind: epoch or none}, request_workloads}. -#}
{% macro sample_intervals_plan() -%}
    {%- set plan = {'full': true, 'cutoffs': {}, 'request_workloads': []} -%}
    {%- set dcgm = ref('base_dcgm__series') -%}
    {%- set kube = ref('base_kube__series') -%}
    {%- if not (is_incremental() and execute) -%}{{ return(plan) }}{%- endif -%}
    {#- inputs_loaded_at and step_seconds came together: a table without the one has neither -#}
    {%- set watermark = telemetry_watermark(this) -%}
    {%- if watermark is none -%}{{ return(plan) }}{%- endif -%}
    {%- set since = "loaded_at > cast('" ~ watermark ~ "' as timestamp)" -%}
    {%- set changes = run_query(
        "select"
        ~ " (select count(*) from " ~ dcgm ~ " where " ~ since ~ " and source_file_size is null)"
        ~ " + (select count(*) from " ~ kube ~ " where " ~ since ~ " and source_file_size is null),"
        ~ " (select min(first_sampled_epoch) from " ~ dcgm ~ " where " ~ since ~ " and sample_count > 0),"
        ~ " (select min(first_sampled_epoch) from " ~ kube ~ " where " ~ since ~ " and sample_count > 0"
        ~ " and metric_name = 'kube_pod_container_resource_requests')"
    ) -%}
    {%- if changes.columns[0].values()[0] > 0 -%}{{ return(plan) }}{%- endif -%}
    {%- set workloads = run_query(
        "select distinct " ~ workload_id('cluster_id', prom_label('namespace'), prom_label('pod'), prom_label('uid'))
        ~ " as workload_id from " ~ kube
        ~ " where " ~ since ~ " and metric_name = 'kube_pod_container_resource_requests' and sample_count > 0"
        ~ " and " ~ prom_label('pod') ~ " is not null order by 1"
    ).columns[0].values() | list -%}
    {%- do plan.update({
        'full': false,
        'cutoffs': {'gpu_slot': changes.columns[1].values()[0], 'compute_request': changes.columns[2].values()[0]},
        'request_workloads': workloads,
    }) -%}
    {{ return(plan) }}
{%- endmacro %}

{#- The kinds of series recomputed by time (sample_intervals_plan) and the columns naming a series of each. -#}
{% macro windowed_interval_kinds() -%}
    {{ return({'gpu_slot': ['gpu_slot_id'], 'compute_request': ['workload_id', 'container', 'resource']}) }}
{%- endmacro %}

{#- The rows a plan recomputes (a condition on the model's columns; sample_intervals_plan). -#}
{% macro sample_intervals_recomputed(plan) -%}
    {%- for kind in windowed_interval_kinds() %}
    (series_kind = '{{ kind }}' and {{ samples_recomputed(plan, kind, 'sampled_epoch') }}) or
    {%- endfor %}
    (series_kind = 'gpu_request' and {{ request_workloads_recomputed(plan, 'workload_id') }})
{%- endmacro %}

{#- A windowed kind's samples a plan recomputes: every one, those from its cutoff on, or none. -#}
{% macro samples_recomputed(plan, kind, column) -%}
    {%- if plan.full -%}
    true
    {%- elif plan.cutoffs.get(kind) is not none -%}
    {{ column }} >= {{ plan.cutoffs[kind] }}
    {%- else -%}
    false
    {%- endif -%}
{%- endmacro %}

{#- The intervals of a windowed kind's rows just computed (`window`: macro sample_intervals over its samples,
    keyed by `keys`, with `columns` besides): their gap, and, in window mode, their series' step over all of its
    samples: the shortest of the new rows' own step, the table's kept rows' step (all before the cutoff: the
    pre-hook deleted the rest) and the gap from the last kept row to the series' first new sample (least skips
    nulls); the duration from those. -#}
{% macro windowed_intervals(window, kind, keys, columns, window_mode) -%}
    {%- set step = 'least(' ~ window ~ '.step_seconds, kept.step_seconds, case when firsts.first_sampled_epoch'
        ~ ' > kept.last_kept_epoch then firsts.first_sampled_epoch - kept.last_kept_epoch end)'
        if window_mode else window ~ '.step_seconds' -%}
    select
        {%- for column in keys + columns %}
        {{ window }}.{{ column }},
        {%- endfor %}
        {{ window }}.gap_seconds,
        {{ step }} as step_seconds,
        {{ sample_duration(window ~ '.gap_seconds', step) }} as duration_seconds
    from {{ window }}
    {%- if window_mode %}
    left join (
        select
            {{ keys | join(', ') }},
            min(sampled_epoch) as first_sampled_epoch
        from {{ window }}
        group by {{ keys | join(', ') }}
    ) as firsts
        on
        {%- for key in keys %}
        {{ 'and ' if not loop.first }}{{ window }}.{{ key }} is not distinct from firsts.{{ key }}
        {%- endfor %}
    left join (
        select
            {{ keys | join(', ') }},
            max(sampled_epoch) as last_kept_epoch,
            min(step_seconds) as step_seconds
        from {{ this }}
        where series_kind = '{{ kind }}'
        group by {{ keys | join(', ') }}
    ) as kept
        on
        {%- for key in keys %}
        {{ 'and ' if not loop.first }}{{ window }}.{{ key }} is not distinct from kept.{{ key }}
        {%- endfor %}
    {%- endif %}
{%- endmacro %}

{#- The workloads whose request series a plan recomputes: every one, or its request_workloads (quoted literals). -#}
{% macro request_workloads_recomputed(plan, column) -%}
    {%- if plan.full -%}
    true
    {%- elif plan.request_workloads -%}
    {{ column }} in {{ quote_text_tuple(plan.request_workloads) }}
    {%- else -%}
    false
    {%- endif -%}
{%- endmacro %}

{#- pre-hook: an incremental run first deletes the rows it recomputes. -#}
{% macro delete_sample_intervals_to_recompute() -%}
    {%- if is_incremental() -%}
    delete from {{ this }} where {{ sample_intervals_recomputed(sample_intervals_plan()) }}
    {%- else -%}
    select 1
    {%- endif -%}
{%- endmacro %}

{#- post-hook, per windowed kind: each series' rows kept from earlier builds take what the rows just computed
    change for them: the last one before them its gap to the series' first new sample, and every one the series'
    step when it got shorter. The rows just computed are the kind's rows of the newest inputs_loaded_at; a run that
    computed none finds those of the run before, already applied, and changes nothing. -#}
{% macro update_sample_interval_boundaries(kind) -%}
    {%- if is_incremental() -%}
    {%- set keys = windowed_interval_kinds()[kind] -%}
    {%- set new_gap = '(newest.first_sampled_epoch - kept.sampled_epoch)' -%}
    {%- set is_boundary -%}
        (kept.gap_seconds is null or kept.sampled_epoch + kept.gap_seconds >= newest.first_sampled_epoch)
    {%- endset -%}
    {%- set gap -%}
        case when {{ is_boundary }} then {{ new_gap }} else kept.gap_seconds end
    {%- endset -%}
    update {{ this }} as kept
    set
        gap_seconds = {{ gap }},
        step_seconds = newest.step_seconds,
        duration_seconds = {{ sample_duration(gap, 'newest.step_seconds') }}
    from (
        select
            {{ keys | join(', ') }},
            max(inputs_loaded_at) as inputs_loaded_at,
            min(sampled_epoch) as first_sampled_epoch,
            min(step_seconds) as step_seconds
        from {{ this }}
        where
            series_kind = '{{ kind }}'
            and inputs_loaded_at = (select max(inputs_loaded_at) from {{ this }} where series_kind = '{{ kind }}')
        group by {{ keys | join(', ') }}
    ) as newest
    where
        kept.series_kind = '{{ kind }}'
        {%- for key in keys %}
        and kept.{{ key }} is not distinct from newest.{{ key }}
        {%- endfor %}
        and kept.inputs_loaded_at < newest.inputs_loaded_at
        and (
            ({{ is_boundary }} and kept.gap_seconds is distinct from {{ new_gap }})
            or kept.step_seconds is distinct from newest.step_seconds
        )
    {%- else -%}
    select 1
    {%- endif -%}
{%- endmacro %}
