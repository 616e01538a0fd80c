-- Every usable bill line is allocated, and its allocation rows sum exactly to its BilledCost and
-- EffectiveCost, with ratios summing exactly to 1. Returns the offending lines.
{{ config(severity='error') }}

with

charges as (

    select * from {{ ref('int_bill_line_items') }}
    where quarantine_reason is null

),

allocations as (

    select
        charge_id,
        sum(billed_cost) as allocated_billed_cost,
        sum(effective_cost) as allocated_effective_cost,
        sum(allocation_ratio) as ratio_total,
        count(*) as allocation_rows
    from {{ ref('fct_cost_allocation') }}
    group by 1

),

compared as (

    select
        charges.charge_id,
        charges.source_file,
        charges.source_row_number,
        charges.billed_cost,
        allocations.allocated_billed_cost,
        charges.effective_cost,
        allocations.allocated_effective_cost,
        allocations.ratio_total,
        allocations.allocation_rows
    from charges
    full outer join allocations on charges.charge_id = allocations.charge_id

)

select *
from compared
where allocation_rows is null
    or billed_cost is null
    or allocated_billed_cost <> billed_cost
    or allocated_effective_cost <> effective_cost
    or ratio_total <> 1
