-- GPU telemetry gaps longer than var gpucost_max_sample_gap_seconds, one row per GPU slot (a GPU, or a MIG
-- instance of it) and gap. Within the bound a sample stands for the time to the next one (the scrape in
-- between is interpolated); beyond it the sample counts for at most the slot's own step and the rest of the
-- gap is not GPU time: a missing scrape is not idle time. This report flags those gaps, with the seconds
-- counted and not counted, so an exporter outage is visible next to the money it did not move.
with

samples as (

    select * from {{ ref('stg_dcgm__gpu_samples') }}

),

slot_times as (

    select distinct
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_instance_id,
        sampled_epoch
    from samples

),

gaps as (

    select
        *,
        lead(sampled_epoch) over (
            partition by cluster_id, node_name, gpu_uuid, gpu_instance_id order by sampled_epoch
        ) as next_sampled_epoch
    from slot_times

),

steps as (

    select
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_instance_id,
        min(case when next_sampled_epoch > sampled_epoch then next_sampled_epoch - sampled_epoch end)
            as step_seconds
    from gaps
    group by 1, 2, 3, 4

),

flagged as (

    select
        gaps.cluster_id,
        gaps.node_name,
        gaps.gpu_uuid,
        gaps.gpu_instance_id,
        gaps.sampled_epoch,
        gaps.next_sampled_epoch,
        gaps.next_sampled_epoch - gaps.sampled_epoch as gap_seconds,
        {{ sample_duration('gaps.next_sampled_epoch - gaps.sampled_epoch', 'steps.step_seconds') }}
            as counted_seconds
    from gaps
    inner join steps
        on gaps.cluster_id = steps.cluster_id
        and gaps.node_name = steps.node_name
        and gaps.gpu_uuid = steps.gpu_uuid
        and gaps.gpu_instance_id is not distinct from steps.gpu_instance_id
    where gaps.next_sampled_epoch - gaps.sampled_epoch > {{ max_sample_gap_seconds() }}

),

final as (

    select
        cast(cluster_id as string) as cluster_id,
        cast(node_name as string) as node_name,
        cast(gpu_uuid as string) as gpu_uuid,
        cast(gpu_instance_id as string) as gpu_instance_id,
        {{ from_epoch_seconds('sampled_epoch') }} as last_sample_before_at,
        {{ from_epoch_seconds('next_sampled_epoch') }} as first_sample_after_at,
        cast(gap_seconds as bigint) as gap_seconds,
        cast(counted_seconds as bigint) as counted_seconds,
        cast(gap_seconds - counted_seconds as bigint) as uncounted_seconds,
        'telemetry_gap_beyond_{{ max_sample_gap_seconds() }}s' as gap_reason
    from flagged

)

select * from final
