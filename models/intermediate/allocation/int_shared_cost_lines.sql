-- Shared bill lines, each with the scopes (narrow to wide) whose owners it is spread across:
-- its billing account's period, then the whole billing period, in the same currency.
with

classified as (

    select * from {{ ref('int_bill_lines_classified') }}
    where line_class = 'shared'

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

final as (

    select
        classified.charge_id,
        [
            {{ shared_scope_key('charges', 'account') }},
            {{ shared_scope_key('charges', 'period') }}
        ] as scope_keys,
        charges.billed_cost,
        charges.effective_cost
    from classified
    inner join charges on classified.charge_id = charges.charge_id

)

select * from final
