-- Exchange rates for reporting, from <landing>/reference/fx/*.csv when landed (columns from_currency,
-- to_currency, rate_month as YYYY-MM, rate, rate_source): one rate per currency pair and month.
with

source as (

    {{ read_optional_csv(
        'reference/fx/*.csv', ['from_currency', 'to_currency', 'rate_month', 'rate', 'rate_source']
    ) }}

),

final as (

    select
        upper(trim(from_currency)) || '>' || upper(trim(to_currency)) || '@' || trim(rate_month) as fx_rate_id,
        upper(trim(from_currency)) as from_currency,
        upper(trim(to_currency)) as to_currency,
        coalesce(nullif(trim(rate_source), ''), filename) as rate_source,
        -- up to 12 decimal places, so cents x rate stays exact in DECIMAL(38, 14); more is a null rate,
        -- which fails the rate's data test (never rounded silently)
        case
            when not {{ regexp_search() }}(trim(rate), '\.[0-9]{13,}')
                then {{ dbt.safe_cast('trim(rate)', 'decimal(38, 12)') }}
        end as fx_rate,
        cast({{ dbt.safe_cast("trim(rate_month) || '-01'", 'date') }} as date) as rate_month,
        filename as source_file
    from source
    where nullif(trim(from_currency), '') is not null

)

select * from final
