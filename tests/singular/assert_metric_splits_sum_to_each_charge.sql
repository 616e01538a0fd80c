-- Every allocated charge's ListCost, ContractedCost, PricingQuantity and ConsumedQuantity shares
-- (fct_allocation_metric_splits, built incrementally by charge) sum exactly to the charge's own, with one
-- share per allocation: a stale, missing or doubled share of any charge fails the build.
with

allocations as (

    select
        charge_id,
        count(*) as allocations
    from {{ ref('fct_cost_allocation') }}
    group by 1

),

splits as (

    select
        charge_id,
        count(*) as allocations,
        sum(list_cost) as list_cost,
        sum(contracted_cost) as contracted_cost,
        sum(pricing_quantity) as pricing_quantity,
        sum(consumed_quantity) as consumed_quantity
    from {{ ref('fct_allocation_metric_splits') }}
    group by 1

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

final as (

    select
        coalesce(allocations.charge_id, splits.charge_id) as charge_id,
        allocations.allocations as allocation_rows,
        splits.allocations as split_rows,
        charges.list_cost,
        splits.list_cost as split_list_cost
    from allocations
    full outer join splits on allocations.charge_id = splits.charge_id
    left join charges on coalesce(allocations.charge_id, splits.charge_id) = charges.charge_id
    where
        allocations.allocations is distinct from splits.allocations
        or charges.list_cost is distinct from splits.list_cost
        or charges.contracted_cost is distinct from splits.contracted_cost
        or charges.pricing_quantity is distinct from splits.pricing_quantity
        or charges.consumed_quantity is distinct from splits.consumed_quantity

)

select * from final
