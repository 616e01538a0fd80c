-- Each month's cent-rounded chargeback sums exactly to the bill's total rounded to cents,
-- for billed and effective cost. Returns the offending months.
with

bill as (

    select
        billing_period_start,
        billing_currency,
        round(sum(billed_cost), 2) as bill_billed_cents,
        round(sum(effective_cost), 2) as bill_effective_cents
    from {{ ref('int_bill_line_items') }}
    where quarantine_reason is null
    group by 1, 2

),

statements as (

    select
        billing_period_start,
        billing_currency,
        sum(billed_cost) as statement_billed_cents,
        sum(effective_cost) as statement_effective_cents,
        sum(direct_cost + usage_cost + idle_cost + shared_cost + unallocated_cost) as kinds_total_cents
    from {{ ref('fct_chargeback_monthly') }}
    group by 1, 2

)

select
    bill.*,
    statements.*
from bill
full outer join statements
    on bill.billing_period_start = statements.billing_period_start
    and bill.billing_currency = statements.billing_currency
where statements.statement_billed_cents is distinct from bill.bill_billed_cents
    or statements.statement_effective_cents is distinct from bill.bill_effective_cents
    or statements.kinds_total_cents is distinct from bill.bill_billed_cents
