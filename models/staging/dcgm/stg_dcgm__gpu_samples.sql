-- One row per GPU, pod and scrape time, with the DCGM fields side by side (duplicate scrapes collapse).
with

source as (

    select * from {{ ref('base_dcgm__samples') }}

),

pivoted as (

    select
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_index,
        gpu_model,
        namespace,
        pod,
        container,
        gpu_instance_id,
        gpu_instance_profile,
        hpc_job,
        sampled_epoch,
        max(case when metric_name = 'DCGM_FI_DEV_GPU_UTIL' then sample_value end) as gpu_util_percent,
        max(case when metric_name = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' then sample_value end) as gr_engine_active_ratio,
        max(case when metric_name = 'DCGM_FI_DEV_FB_USED' then sample_value end) as fb_used_mib,
        max(case when metric_name = 'DCGM_FI_DEV_POWER_USAGE' then sample_value end) as power_usage_watts
    from source
    where quarantine_reason is null
    group by 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12

),

final as (

    select
        {{ workload_id('cluster_id', 'namespace', 'pod') }} as pod_key,
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_index,
        gpu_model,
        namespace,
        pod,
        container,
        gpu_instance_id,
        gpu_instance_profile,
        hpc_job,
        -- the part of the physical GPU a series stands for: 1 for a whole GPU; a MIG instance's compute
        -- slices (1g.10gb -> 1 of var gpucost_mig_compute_slices) or, under gpucost_mig_share: memory, its
        -- memory out of the GPU's (modelName's NNGB)
        {{ mig_share('gpu_instance_profile', 'gpu_model') }} as gpu_share,
        -- share of the GPU busy: the profiling engine-active ratio when exported, else GPU_UTIL / 100
        least(greatest(coalesce(gr_engine_active_ratio, gpu_util_percent / 100.0, 0), 0), 1) as busy_ratio,
        gpu_util_percent,
        gr_engine_active_ratio,
        fb_used_mib,
        power_usage_watts,
        sampled_epoch
    from pivoted

)

select * from final
