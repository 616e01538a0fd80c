-- The landed exchange rates into the reporting currency (var gpucost_reporting_currency), one per source
-- currency and month: what rpt_chargeback_reporting_currency converts statements with.
with

rates as (

    select * from {{ ref('stg_reference__fx_rates') }}

),

final as (

    select
        fx_rate_id,
        from_currency,
        to_currency,
        rate_source,
        fx_rate,
        rate_month
    from rates
    where to_currency = '{{ var("gpucost_reporting_currency") }}'

)

select * from final
