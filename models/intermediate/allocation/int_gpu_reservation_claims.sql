-- What each reservation left unused in each cluster and bill-line period: reserved GPUs x the period, less
-- the GPU time its team's workloads took there (on the allocation basis), never negative. A team holding
-- several reservations in one scope counts its use against them in proportion to their size.
with

reservations as (

    select * from {{ ref('stg_reference__gpu_reservations') }}

),

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

prorated as (

    select * from {{ ref('int_gpu_costs_prorated') }}
    where allocation_kind = 'usage'

),

workloads as (

    select * from {{ ref('int_workloads') }}

),

scopes as (

    select distinct
        {{ reservation_scope_key('lines') }} as reservation_scope_key,
        {{ idle_scope_key('lines', 'cluster_day') }} as cluster_day_key,
        lines.cluster_id,
        lines.period_start_epoch,
        lines.period_end_epoch
    from lines

),

team_use as (

    select
        {{ reservation_scope_key('lines') }} as reservation_scope_key,
        workloads.team_id,
        sum(prorated.basis_gpu_ms) as used_gpu_ms
    from prorated
    inner join lines on prorated.charge_id = lines.charge_id
    inner join workloads on prorated.workload_id = workloads.workload_id
    group by 1, 2

),

active as (

    select
        scopes.reservation_scope_key,
        scopes.cluster_day_key,
        reservations.reservation_id,
        reservations.team_id,
        reservations.project_id,
        cast(round(
            reservations.reserved_gpus * 1000 * (scopes.period_end_epoch - scopes.period_start_epoch)
        ) as bigint) as reserved_gpu_ms
    from scopes
    inner join reservations
        on
        reservations.cluster_id in (scopes.cluster_id, '*')
        and {{ epoch_seconds('cast(reservations.valid_from as timestamp)') }} <= scopes.period_start_epoch
        and {{ epoch_seconds('cast(reservations.valid_to as timestamp)') }} > scopes.period_start_epoch

),

counted as (

    select
        active.*,
        cast(round(
            coalesce(team_use.used_gpu_ms, 0) * active.reserved_gpu_ms
            / nullif(sum(active.reserved_gpu_ms) over (
                partition by active.reservation_scope_key, active.team_id
            ), 0)
        ) as bigint) as used_gpu_ms
    from active
    left join team_use
        on
        active.reservation_scope_key = team_use.reservation_scope_key
        and active.team_id = team_use.team_id

),

final as (

    select
        reservation_scope_key,
        cluster_day_key,
        reservation_id,
        team_id,
        project_id,
        reserved_gpu_ms,
        used_gpu_ms,
        greatest(reserved_gpu_ms - used_gpu_ms, 0) as unused_gpu_ms
    from counted

)

select * from final
