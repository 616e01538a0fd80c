-- The monthly statements restated in one reporting currency (var gpucost_reporting_currency), with the
-- conversion recorded on every row: the statement's own currency and cents, the rate, its month and
-- source. A statement in another currency without a rate for its month is kept with conversion_status
-- `no_rate` and no reporting amount, so a sum over reporting_billed_cost never mixes currencies.
with

statements as (

    select * from {{ ref('fct_chargeback_monthly') }}

),

rates as (

    select * from {{ ref('int_fx_rates_to_reporting_currency') }}

),

converted as (

    select
        statements.chargeback_id,
        statements.billing_period_start,
        statements.team_id,
        statements.project_id,
        statements.billing_currency,
        statements.billed_cost,
        '{{ var("gpucost_reporting_currency") }}' as reporting_currency,
        case
            when statements.billing_currency = '{{ var("gpucost_reporting_currency") }}' then 'same_currency'
            when rates.fx_rate is not null then 'converted'
            else 'no_rate'
        end as conversion_status,
        case
            when statements.billing_currency = '{{ var("gpucost_reporting_currency") }}' then 1
            else rates.fx_rate
        end as fx_rate,
        rates.rate_month as fx_rate_month,
        rates.rate_source as fx_rate_source
    from statements
    left join rates
        on statements.billing_currency = rates.from_currency
        and statements.billing_period_start = rates.rate_month

),

final as (

    select
        md5(chargeback_id || '|' || reporting_currency) as reporting_id,
        chargeback_id,
        team_id,
        project_id,
        billing_currency,
        reporting_currency,
        conversion_status,
        fx_rate_source,
        cast(billed_cost as {{ cents_type() }}) as billed_cost,
        cast(fx_rate as decimal(38, 12)) as fx_rate,
        cast(billed_cost * cast(fx_rate as decimal(38, 12)) as decimal(38, 14)) as reporting_billed_cost,
        billing_period_start,
        fx_rate_month
    from converted

)

select * from final
