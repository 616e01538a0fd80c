-- On-prem / colocation cost items from <landing>/billing/onprem/*.csv (docs/billing-formats.md):
-- purchased hardware (price, start date, depreciation months, residual value), monthly colocation and
-- licence fees, and power tariffs (price per kWh). Typed; a row that cannot be used keeps a reason.
with

source as (

    {{ read_optional_csv('billing/onprem/**/*.csv', [
        'item_id', 'item_type', 'resource_id', 'cluster_id', 'description', 'billing_account_id',
        'currency', 'amount', 'start_date', 'end_date', 'depreciation_months', 'residual_value',
        'price_per_kwh',
    ]) }}

),

typed as (

    select
        trim(item_id) as item_id,
        lower(trim(item_type)) as item_type,
        nullif(trim(resource_id), '') as resource_id,
        nullif(trim(cluster_id), '') as cluster_id,
        description,
        coalesce(nullif(trim(billing_account_id), ''), 'onprem') as billing_account_id,
        upper(trim(currency)) as billing_currency,
        {{ dbt.safe_cast('trim(amount)', money_type()) }} as amount,
        {{ dbt.safe_cast("coalesce(nullif(trim(residual_value), ''), '0')", money_type()) }} as residual_value,
        {{ dbt.safe_cast('trim(price_per_kwh)', money_type()) }} as price_per_kwh,
        {{ dbt.safe_cast('trim(depreciation_months)', 'integer') }} as depreciation_months,
        {{ dbt.safe_cast('trim(start_date)', 'date') }} as start_date,
        {{ dbt.safe_cast('trim(end_date)', 'date') }} as end_date,
        filename as source_file
    from source
    where nullif(trim(item_id), '') is not null

),

final as (

    select
        *,
        case
            when item_type not in ('hardware', 'colocation', 'licence', 'license', 'power')
                then 'unknown item_type: ' || coalesce(item_type, '<null>')
            when billing_currency is null or not {{ regexp_search() }}(billing_currency, '^[A-Z]{3}$')
                then 'invalid currency'
            when start_date is null then 'invalid start_date'
            when item_type = 'power' and (price_per_kwh is null or price_per_kwh < 0)
                then 'invalid price_per_kwh'
            when item_type = 'hardware' and (depreciation_months is null or depreciation_months <= 0)
                then 'invalid depreciation_months'
            when item_type = 'hardware' and (amount is null or residual_value > amount)
                then 'invalid amount or residual_value'
            when item_type in ('colocation', 'licence', 'license') and amount is null then 'invalid amount'
        end as quarantine_reason
    from typed

)

select * from final
