-- Per volume_claim bill line and pod incarnation: the milliseconds within the line's charge period during
-- which the pod held a claim bound to the line's disk (alive and spec'd with the claim). Several pods holding
-- the claim at once (ReadWriteMany, or a pod and its replacement) each count their own time.
with

lines as (

    select * from {{ ref('int_volume_claim_lines') }}

),

mounts as (

    select * from {{ ref('int_volume_claim_mounts') }}
    where workload_id is not null

),

held as (

    select
        lines.charge_id,
        mounts.workload_id,
        least(mounts.mounted_until_epoch, lines.period_end_epoch)
        - greatest(mounts.mounted_from_epoch, lines.period_start_epoch) as overlap_seconds
    from lines
    inner join mounts
        on lines.volume_key = mounts.volume_key
        and lines.period_end_epoch > mounts.mounted_from_epoch
        and lines.period_start_epoch < mounts.mounted_until_epoch

),

final as (

    select
        charge_id,
        workload_id,
        cast(sum(overlap_seconds) * 1000 as bigint) as mounted_ms
    from held
    group by 1, 2

)

select * from final
