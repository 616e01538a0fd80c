-- The placed allocations with shared workloads split across their consuming projects: the rows of a
-- workload listed in int_workload_shares are replaced by their split (int_cost_allocations_shared_split).
with

placed as (

    select * from {{ ref('int_cost_allocations_placed') }}

),

shares as (

    select * from {{ ref('int_workload_shares') }}

),

split as (

    select * from {{ ref('int_cost_allocations_shared_split') }}

),

kept as (

    select placed.*
    from placed
    where
        placed.workload_id is null
        or placed.workload_id not in (select shares.workload_id from shares)

),

final as (

    select * from kept
    union all
    select
        charge_id,
        workload_id,
        team_id,
        project_id,
        user_id,
        allocation_kind,
        allocation_basis,
        attribution_method,
        attribution_rule_id,
        attribution_confidence,
        unallocated_reason,
        allocation_ratio,
        billed_cost,
        effective_cost
    from split

)

select * from final
