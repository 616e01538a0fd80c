-- The monthly chargeback: one row per billing month, currency, team and project, in cents that add up.
-- Cents are rounded by largest remainder within each month and currency, so the month's rows sum exactly
-- to the bill's total rounded to cents.
with

allocations as (

    select * from {{ ref('fct_cost_allocation') }}

),

cells as (

    select
        billing_period_start,
        billing_currency,
        team_id,
        project_id,
        allocation_kind,
        sum(billed_cost) as billed_cost
    from allocations
    group by 1, 2, 3, 4, 5

),

cells_rounded as (

    select
        *,
        {{ largest_remainder_cents(
            'billed_cost',
            'billing_period_start, billing_currency',
            'team_id, project_id, allocation_kind'
        ) }} as billed_cents
    from cells

),

owner_effective as (

    select
        billing_period_start,
        billing_currency,
        team_id,
        project_id,
        sum(effective_cost) as effective_cost
    from allocations
    group by 1, 2, 3, 4

),

owner_effective_rounded as (

    select
        *,
        {{ largest_remainder_cents(
            'effective_cost',
            'billing_period_start, billing_currency',
            'team_id, project_id'
        ) }} as effective_cents
    from owner_effective

),

by_owner as (

    select
        billing_period_start,
        billing_currency,
        team_id,
        project_id,
        {% for kind in ['direct', 'usage', 'idle', 'shared', 'unallocated'] -%}
            cast(sum(case when allocation_kind = '{{ kind }}' then billed_cents else 0 end) as {{ cents_type() }})
                as {{ kind }}_cost,
        {% endfor -%}
        cast(sum(billed_cents) as {{ cents_type() }}) as billed_cost
    from cells_rounded
    group by 1, 2, 3, 4

),

final as (

    select
        md5(
            cast(by_owner.billing_period_start as string) || '|' || by_owner.billing_currency
            || '|' || by_owner.team_id || '|' || by_owner.project_id
        ) as chargeback_id,
        by_owner.team_id,
        by_owner.project_id,
        by_owner.billing_currency,
        by_owner.direct_cost,
        by_owner.usage_cost,
        by_owner.idle_cost,
        by_owner.shared_cost,
        by_owner.unallocated_cost,
        by_owner.billed_cost,
        owner_effective_rounded.effective_cents as effective_cost,
        by_owner.billing_period_start
    from by_owner
    inner join owner_effective_rounded
        on by_owner.billing_period_start = owner_effective_rounded.billing_period_start
        and by_owner.billing_currency = owner_effective_rounded.billing_currency
        and by_owner.team_id = owner_effective_rounded.team_id
        and by_owner.project_id = owner_effective_rounded.project_id

)

select * from final
