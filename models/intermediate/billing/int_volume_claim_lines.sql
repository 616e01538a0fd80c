-- Storage bill lines whose resource is the cloud disk behind a Kubernetes PersistentVolume
-- (line_class volume_claim), with the claims bound to it; int_volume_claim_line_workloads has the pods.
with

classified as (

    select * from {{ ref('int_bill_lines_classified') }}
    where line_class = 'volume_claim'

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

persistent_volumes as (

    select * from {{ ref('stg_kube__persistent_volumes') }}

),

mounts as (

    select * from {{ ref('int_volume_claim_mounts') }}

),

volume_names as (

    select
        volume_key,
        {{ distinct_text_agg('persistent_volume_id', "', '") }} as persistent_volume_ids
    from persistent_volumes
    where volume_key is not null
    group by 1

),

claim_names as (

    select
        volume_key,
        {{ distinct_text_agg('claim_id', "', '") }} as claim_ids
    from mounts
    group by 1

),

final as (

    select
        classified.charge_id,
        classified.volume_key,
        volume_names.persistent_volume_ids,
        claim_names.claim_ids,
        charges.billed_cost,
        charges.effective_cost,
        {{ epoch_seconds('charges.charge_period_start_at') }} as period_start_epoch,
        {{ epoch_seconds('charges.charge_period_end_at') }} as period_end_epoch
    from classified
    inner join charges on classified.charge_id = charges.charge_id
    left join volume_names on classified.volume_key = volume_names.volume_key
    left join claim_names on classified.volume_key = claim_names.volume_key

)

select * from final
