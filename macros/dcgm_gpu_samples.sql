{#- stg_dcgm__gpu_samples' rows, from the DCGM series table `series` (base_dcgm__series): one row per GPU, pod
    and scrape time with the DCGM fields side by side (duplicate scrapes collapse); from hourly aggregates, one
    row per GPU, pod and hour. With since_epoch, only the rows sampled at or after it (and with until_epoch,
    before it): exactly `select * from stg_dcgm__gpu_samples where sampled_epoch >= since_epoch and sampled_epoch
    < until_epoch`, but the series that end before since_epoch (or start at or after until_epoch) are left out
    before their samples are unnested (a filter on the view's sampled_epoch cannot reach them: it is a list
    element). For the readers that keep the samples after an incremental cutoff
    (int_telemetry_sample_intervals, int_gpu_usage_hourly, and the view's key test through get_where_subquery).
    The series are grouped by their labels first (a few rows per GPU and file), so the per-sample pivot groups by
    a number and a time instead of twelve label columns. -#}
{% macro dcgm_gpu_samples(series, since_epoch=none, until_epoch=none) -%}
with

source as (

    select * from {{ series }}
    where
        sample_count > 0
        {%- if since_epoch is not none %}
        -- a series ending before since_epoch holds no sample the caller keeps: not unnested at all
        and last_sampled_epoch >= {{ since_epoch }}
        {%- endif %}
        {%- if until_epoch is not none %}
        and first_sampled_epoch < {{ until_epoch }}
        {%- endif %}

),

series as (

    select
        {%- for label in dcgm_series_group_labels() %}
        {{ label }},
        {%- endfor %}
        metric_name,
        sampled_epochs,
        sample_values,
        -- the series group: a hash of its labels, not a dense_rank (which sorted every series row by twelve text
        -- columns, in every read of this view: 6.1 s of 396,116 rows at 128 nodes x 30 days). Two groups sharing a
        -- hash would merge their samples: assert_dcgm_series_groups_hash_apart fails the build if that ever happens
        {{ series_group_id(dcgm_series_group_labels()) }} as series_group_id,
        -- a number for the GPU slot (GPU, or MIG instance of it) on its node, the same in every build
        {{ gpu_slot_id('cluster_id', 'node_name', 'gpu_uuid', 'gpu_instance_id') }} as gpu_slot_id
    from source

),

series_groups as (

    select distinct
        series_group_id,
        gpu_slot_id,
        {{ dcgm_series_group_labels() | join(',\n        ') }}
    from series

),

samples as (

    select
        series_group_id,
        metric_name,
        {{ unnest_zip([('sampled_epochs', 'sampled_epoch'), ('sample_values', 'sample_value')]) }}
    from series

),

pivoted as (

    select
        series_group_id,
        sampled_epoch,
        max(case when metric_name = 'DCGM_FI_DEV_GPU_UTIL' then sample_value end) as gpu_util_percent,
        max(case when metric_name = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' then sample_value end) as gr_engine_active_ratio,
        max(case when metric_name = 'DCGM_FI_DEV_FB_USED' then sample_value end) as fb_used_mib,
        max(case when metric_name = 'DCGM_FI_DEV_POWER_USAGE' then sample_value end) as power_usage_watts,
        -- hourly aggregates (gpucost collect --resolution hourly): the seconds the series was scraped that hour
        max(case when metric_name = 'gpucost_dcgm_sample_seconds_1h' then sample_value end) as covered_seconds
    from samples
    {%- if since_epoch is not none or until_epoch is not none %}
    where {{ epoch_within('sampled_epoch', since_epoch, until_epoch) }}
    {%- endif %}
    group by 1, 2

),

final as (

    select
        -- the pod's key; with a pod_uid label, the incarnation itself (the kube workload_id: no matching by time)
        {{ workload_id(
            'series_groups.cluster_id', 'series_groups.namespace', 'series_groups.pod', 'series_groups.pod_uid'
        ) }} as pod_key,
        series_groups.cluster_id,
        series_groups.node_name,
        series_groups.gpu_uuid,
        series_groups.gpu_index,
        series_groups.gpu_model,
        series_groups.namespace,
        series_groups.pod,
        series_groups.container,
        series_groups.gpu_instance_id,
        series_groups.gpu_instance_profile,
        series_groups.hpc_job,
        series_groups.gpu_slot_id,
        -- the part of the physical GPU a series stands for: 1 for a whole GPU; a MIG instance's compute
        -- slices (1g.10gb -> 1 of var gpucost_mig_compute_slices) or, under gpucost_mig_share: memory, its
        -- memory out of the GPU's (modelName's NNGB)
        {{ mig_share('series_groups.gpu_instance_profile', 'series_groups.gpu_model') }} as gpu_share,
        -- share of the GPU busy: the profiling engine-active ratio when exported, else GPU_UTIL / 100
        least(greatest(coalesce(
            pivoted.gr_engine_active_ratio, pivoted.gpu_util_percent / 100.0, 0
        ), 0), 1) as busy_ratio,
        pivoted.gpu_util_percent,
        pivoted.gr_engine_active_ratio,
        pivoted.fb_used_mib,
        pivoted.power_usage_watts,
        pivoted.covered_seconds,
        pivoted.sampled_epoch
    from pivoted
    inner join series_groups on pivoted.series_group_id = series_groups.series_group_id

)

select * from final
{%- endmacro %}
