-- The owner of every workload an allocation can name, resolved once: each workload of int_workloads and each
-- workload id the usage models saw (a GPU series' pod that matched no pod record, a Slurm job, a volume's
-- holder), with its attributed team and project or __unallocated__, and why not when it is not attributed.
-- Every allocation model reads its owners here (int_gpu_idle_weights, int_cost_allocations_placed,
-- fct_gpu_usage) instead of joining int_workloads and defaulting the owner itself.
with

workloads as (

    select * from {{ ref('int_workloads') }}

),

gpu_usage as (

    select * from {{ ref('int_gpu_usage_hourly') }}

),

compute_usage as (

    select * from {{ ref('int_node_compute_usage_hourly') }}

),

volume_mounts as (

    select * from {{ ref('int_volume_claim_mounts') }}

),

workload_ids as (

    select workloads.workload_id from workloads
    union
    select gpu_usage.workload_id from gpu_usage
    where gpu_usage.workload_id is not null
    union
    select compute_usage.workload_id from compute_usage
    union
    select volume_mounts.workload_id from volume_mounts
    where volume_mounts.workload_id is not null

),

final as (

    select
        workload_ids.workload_id,
        coalesce(workloads.team_id, '{{ unallocated_owner() }}') as team_id,
        coalesce(workloads.project_id, '{{ unallocated_owner() }}') as project_id,
        coalesce(workloads.owner_key, '{{ unallocated_owner() }}|{{ unallocated_owner() }}') as owner_key,
        workloads.user_id,
        coalesce(workloads.attribution_method, 'none') as attribution_method,
        workloads.attribution_rule_id,
        coalesce(workloads.attribution_confidence, cast(0 as double)) as attribution_confidence,
        case
            when not coalesce(workloads.is_attributed, false)
                then coalesce(workloads.unattributed_reason, 'unknown_workload')
        end as unattributed_reason,
        coalesce(workloads.is_attributed, false) as is_attributed
    from workload_ids
    left join workloads on workload_ids.workload_id = workloads.workload_id

)

select * from final
