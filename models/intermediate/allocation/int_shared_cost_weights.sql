-- Each owner's placed effective cost per scope: the weights shared lines are spread by.
with

placed as (

    select * from {{ ref('int_cost_allocations_owned') }}

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

owner_costs as (

    select
        charges.billing_account_id,
        charges.billing_period_start,
        charges.billing_currency,
        placed.team_id || '|' || placed.project_id as recipient_id,
        sum(placed.effective_cost) as effective_cost
    from placed
    inner join charges on placed.charge_id = charges.charge_id
    where placed.project_id <> '{{ idle_owner() }}'
    group by 1, 2, 3, 4

),

by_account as (

    select
        {{ shared_scope_key('owner_costs', 'account') }} as scope_key,
        owner_costs.recipient_id,
        sum(owner_costs.effective_cost) as weight
    from owner_costs
    group by 1, 2

),

by_period as (

    select
        {{ shared_scope_key('owner_costs', 'period') }} as scope_key,
        owner_costs.recipient_id,
        sum(owner_costs.effective_cost) as weight
    from owner_costs
    group by 1, 2

),

final as (

    select * from by_account
    union all
    select * from by_period

)

select * from final
