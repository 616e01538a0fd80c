-- GPU telemetry gaps longer than var gpucost_max_sample_gap_seconds, one row per GPU slot (a GPU, or a MIG
-- instance of it) and gap. Within the bound a sample stands for the time to the next one (the scrape in
-- between is interpolated); beyond it the sample counts for at most the slot's own step and the rest of the
-- gap is not GPU time: a missing scrape is not idle time. This report flags those gaps, with the seconds
-- counted and not counted, so an exporter outage is visible next to the money it did not move.
-- Also one row per node and UTC day that has GPU node bill lines but no valid DCGM sample at all (every
-- telemetry file of the day empty, truncated or missing): its money then goes to no workload of the node.
with

flagged as (

    -- each GPU slot's sample gaps, computed once with its usage (int_telemetry_sample_intervals: the gap to the
    -- slot's next sample time and the time the sample counts for, at most the slot's own step beyond the bound)
    select
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_instance_id,
        sampled_epoch,
        sampled_epoch + gap_seconds as next_sampled_epoch,
        gap_seconds,
        duration_seconds as counted_seconds
    from {{ ref('int_telemetry_sample_intervals') }}
    where series_kind = 'gpu_slot' and gap_seconds > {{ max_sample_gap_seconds() }}

),

node_lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

series as (

    select * from {{ ref('base_dcgm__series') }}
    where sample_count > 0

),

telemetry_days as (

    select distinct
        cluster_id,
        node_name,
        day_epoch
    from (
        select
            cluster_id,
            node_name,
            {{ unnest_as(
                list_unique(list_map('sampled_epochs', 'sampled_epoch', 'sampled_epoch - sampled_epoch % 86400')),
                'day_epoch'
            ) }}
        from series
    ) as series_days

),

line_days as (

    select
        cluster_id,
        node_name,
        period_start_epoch,
        period_end_epoch,
        {{ unnest_as(epoch_day_starts('period_start_epoch', 'period_end_epoch'), 'day_epoch') }}
    from node_lines
    where node_name is not null

),

billed_days as (

    select
        cluster_id,
        node_name,
        day_epoch,
        count(*) as line_count,
        greatest(min(period_start_epoch), day_epoch) as first_billed_epoch,
        least(max(period_end_epoch), day_epoch + 86400) as last_billed_epoch
    from line_days
    group by 1, 2, 3

),

node_days_without_telemetry as (

    select billed_days.*
    from billed_days
    left join telemetry_days
        on billed_days.cluster_id = telemetry_days.cluster_id
        and billed_days.node_name = telemetry_days.node_name
        and billed_days.day_epoch = telemetry_days.day_epoch
    where telemetry_days.day_epoch is null and billed_days.last_billed_epoch > billed_days.first_billed_epoch

),

slot_gaps as (

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
        'telemetry_gap_beyond_{{ max_sample_gap_seconds() }}s' as gap_reason,
        cast({{ from_epoch_seconds('sampled_epoch - sampled_epoch % 86400') }} as date) as gap_date
    from flagged

),

node_day_gaps as (

    select
        cast(cluster_id as string) as cluster_id,
        cast(node_name as string) as node_name,
        cast(null as string) as gpu_uuid,
        cast(null as string) as gpu_instance_id,
        cast(null as timestamp) as last_sample_before_at,
        cast(null as timestamp) as first_sample_after_at,
        cast(last_billed_epoch - first_billed_epoch as bigint) as gap_seconds,
        cast(0 as bigint) as counted_seconds,
        cast(last_billed_epoch - first_billed_epoch as bigint) as uncounted_seconds,
        'billed_node_day_without_telemetry' as gap_reason,
        cast({{ from_epoch_seconds('day_epoch') }} as date) as gap_date
    from node_days_without_telemetry

),

final as (

    select * from slot_gaps
    union all
    select * from node_day_gaps

)

select * from final
