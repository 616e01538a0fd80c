-- Two GPU slots (cluster, node, GPU and MIG instance) never share a gpu_slot_id. The number is a 60-bit prefix
-- of an md5 (macro gpu_slot_id), so that a slot keeps it from build to build; a clash is possible in principle,
-- and would merge two slots' samples in int_gpu_usage_hourly. One row per number two slots share.
with

slots as (

    select distinct
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_instance_id
    from {{ ref('base_dcgm__series') }}
    where sample_count > 0

),

numbered as (

    select
        {{ gpu_slot_id('cluster_id', 'node_name', 'gpu_uuid', 'gpu_instance_id') }} as gpu_slot_id,
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_instance_id
    from slots

),

final as (

    select
        gpu_slot_id,
        count(*) as slot_count
    from numbered
    group by 1
    having count(*) > 1

)

select * from final
