-- Shared bill lines, each with the scopes (narrow to wide) whose owners it is spread across:
-- its billing account's period, then the whole billing period, in the same currency.
{%- set shared_classes = "'shared'"
    ~ (", 'idle_commitment'" if var('gpucost_idle_policy') not in ('visible', 'platform') else "") %}
with

classified as (

    select * from {{ ref('int_bill_lines_classified') }}
    -- unused commitment is idle capacity: under proportional / even it goes to owners by their cost
    where line_class in ({{ shared_classes }})

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

final as (

    select
        classified.charge_id,
        {{ array_of([shared_scope_key('charges', 'account'), shared_scope_key('charges', 'period')]) }} as scope_keys,
        charges.billed_cost,
        charges.effective_cost
    from classified
    inner join charges on classified.charge_id = charges.charge_id

)

select * from final
