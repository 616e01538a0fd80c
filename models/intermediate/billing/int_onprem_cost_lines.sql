-- On-prem / colocation GPUs as hourly bill lines in the canonical shape, so they flow through the same
-- allocation as cloud lines (a hardware line on a node is a gpu_node line, prorated by GPU time).
--   hardware     (price - residual) / depreciation months per month of its life, split over the
--                month's hours; integer 1e-18 units with largest remainder, so the lines of the whole
--                life add up to price - residual exactly
--   colocation,  the monthly fee split over the month's hours the same way
--   licence
--   power        per node-hour: the energy of its GPUs from DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (a
--                counter in mJ; a drop is a reset, counted from 0) x price per kWh
-- Lines exist for the months the cluster's telemetry covers (an asset's life outside them is not
-- billed here yet), from the item's start date (and until its end date or end of depreciation).
with

items as (

    select * from {{ ref('stg_onprem__cost_items') }}
    where quarantine_reason is null

),

dcgm as (

    select * from {{ ref('base_dcgm__samples') }}
    where quarantine_reason is null and metric_name = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'

),

telemetry_hours as (

    select * from {{ ref('stg_dcgm__telemetry_hours') }}

),

months as (

    select distinct
        cluster_id,
        cast(date_trunc('month', {{ from_epoch_seconds('hour_epoch') }}) as date) as month_start
    from telemetry_hours

),

hours as (

    -- every hour of each month the telemetry touches
    select
        cluster_id,
        month_start,
        {{ unnest_as(
            hour_series(
                'cast(month_start as timestamp)',
                'cast(month_start as timestamp) + interval 1 month - interval 1 hour'
            ),
            'hour_at'
        ) }}
    from months

),

month_hours as (

    select
        cluster_id,
        month_start,
        hour_at,
        row_number() over (partition by cluster_id, month_start order by hour_at) - 1 as hour_index,
        count(*) over (partition by cluster_id, month_start) as hours_in_month
    from hours

),

fixed_items as (

    select
        items.*,
        month_hours.month_start,
        month_hours.hour_at,
        month_hours.hour_index,
        month_hours.hours_in_month,
        case
            when items.item_type = 'hardware' then cast(
                    ({{ months_from("date_trunc('month', items.start_date)", 'month_hours.month_start') }}) as bigint
                )
        end as life_month_index,
        -- the month's amount in integer 1e-18 units
        case
            when items.item_type = 'hardware' then {{ money_units('items.amount - items.residual_value') }}
            else {{ money_units('items.amount') }}
        end as amount_units
    from items
    inner join month_hours
        on items.cluster_id is null or items.cluster_id = month_hours.cluster_id
    where items.item_type <> 'power'
        and month_hours.month_start >= cast(date_trunc('month', items.start_date) as date)
        and (items.end_date is null or month_hours.month_start <= items.end_date)
        and (
            items.item_type <> 'hardware'
            or month_hours.month_start
            < cast({{ plus_months("date_trunc('month', items.start_date)", 'items.depreciation_months') }} as date)
        )

),

fixed_units as (

    select
        *,
        -- this month's share of the whole amount (hardware: largest remainder over the life's months)
        case
            when item_type = 'hardware'
                then {{ split_units_evenly('amount_units', 'depreciation_months', 'life_month_index') }}
            else amount_units
        end as month_units
    from fixed_items

),

fixed_lines as (

    select
        item_id,
        item_type,
        resource_id,
        cluster_id,
        description,
        billing_account_id,
        billing_currency,
        month_start,
        hour_at,
        source_file,
        {{ split_units_evenly('month_units', 'hours_in_month', 'hour_index') }} as line_units
    from fixed_units

),

energy_deltas as (

    select
        cluster_id,
        node_name,
        gpu_uuid,
        sampled_epoch,
        sample_value - lag(sample_value) over (
            partition by cluster_id, node_name, gpu_uuid order by sampled_epoch
        ) as raw_delta,
        sample_value,
        lag(sample_value) over (partition by cluster_id, node_name, gpu_uuid order by sampled_epoch) as previous
    from dcgm
    where metric_name = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'

),

energy_hourly as (

    select
        cluster_id,
        node_name,
        {{ from_epoch_seconds(epoch_hour_floor('sampled_epoch')) }} as hour_at,
        -- a counter that went down was reset: the new value is the energy since the reset
        cast(sum(case when raw_delta >= 0 then raw_delta else sample_value end) as bigint) as energy_millijoules
    from energy_deltas
    where previous is not null
    group by 1, 2, 3

),

power_lines as (

    select
        items.item_id,
        items.item_type,
        energy_hourly.node_name as resource_id,
        energy_hourly.cluster_id,
        items.description,
        items.billing_account_id,
        items.billing_currency,
        cast(date_trunc('month', energy_hourly.hour_at) as date) as month_start,
        energy_hourly.hour_at,
        items.source_file,
        -- mJ x (price per kWh in 1e-18 units) / 3.6e9 mJ per kWh, truncated to the 1e-18 unit
        {{ int_div(
            'cast(energy_hourly.energy_millijoules as ' ~ wide_int_type() ~ ') * ' ~ money_units('items.price_per_kwh'),
            '3600000000'
        ) }} as line_units
    from items
    inner join energy_hourly
        on (items.cluster_id is null or items.cluster_id = energy_hourly.cluster_id)
        and (items.resource_id is null or items.resource_id = energy_hourly.node_name)
        and cast(energy_hourly.hour_at as date) >= items.start_date
        and (items.end_date is null or cast(energy_hourly.hour_at as date) <= items.end_date)
    where items.item_type = 'power'

),

lines as (

    select * from fixed_lines
    union all
    select * from power_lines

),

mapped as (

    select
        billing_account_id as {{ adapter.quote('BillingAccountId') }},
        cast(null as string) as {{ adapter.quote('BillingAccountName') }},
        cluster_id as {{ adapter.quote('SubAccountId') }},
        cast(null as string) as {{ adapter.quote('SubAccountName') }},
        cast(null as string) as {{ adapter.quote('InvoiceId') }},
        'On-prem' as {{ adapter.quote('ProviderName') }},
        'On-prem' as {{ adapter.quote('InvoiceIssuerName') }},
        cast(null as string) as {{ adapter.quote('PublisherName') }},
        billing_currency as {{ adapter.quote('BillingCurrency') }},
        {{ utc_text('month_start', is_date=true) }} as {{ adapter.quote('BillingPeriodStart') }},
        {{ utc_text('month_start + interval 1 month', is_date=true) }} as {{ adapter.quote('BillingPeriodEnd') }},
        {{ utc_text('hour_at') }} as {{ adapter.quote('ChargePeriodStart') }},
        {{ utc_text('hour_at + interval 1 hour') }} as {{ adapter.quote('ChargePeriodEnd') }},
        'Usage' as {{ adapter.quote('ChargeCategory') }},
        cast(null as string) as {{ adapter.quote('ChargeClass') }},
        'Usage-Based' as {{ adapter.quote('ChargeFrequency') }},
        description as {{ adapter.quote('ChargeDescription') }},
        case item_type
            when 'hardware' then 'GPU hardware depreciation'
            when 'power' then 'Energy'
            when 'colocation' then 'Colocation'
            else 'Software licence'
        end as {{ adapter.quote('ServiceName') }},
        cast(null as string) as {{ adapter.quote('ServiceCategory') }},
        resource_id as {{ adapter.quote('ResourceId') }},
        item_id as {{ adapter.quote('ResourceName') }},
        item_type as {{ adapter.quote('ResourceType') }},
        cast(null as string) as {{ adapter.quote('RegionId') }},
        cast(null as string) as {{ adapter.quote('RegionName') }},
        cast(null as string) as {{ adapter.quote('AvailabilityZone') }},
        item_id as {{ adapter.quote('SkuId') }},
        cast(null as string) as {{ adapter.quote('SkuPriceId') }},
        cast(null as string) as {{ adapter.quote('PricingUnit') }},
        cast(null as string) as {{ adapter.quote('PricingQuantity') }},
        cast(null as string) as {{ adapter.quote('ConsumedUnit') }},
        cast(null as string) as {{ adapter.quote('ConsumedQuantity') }},
        cast(null as string) as {{ adapter.quote('ListCost') }},
        cast(null as string) as {{ adapter.quote('ListUnitPrice') }},
        cast(null as string) as {{ adapter.quote('ContractedCost') }},
        cast(null as string) as {{ adapter.quote('ContractedUnitPrice') }},
        cast(null as string) as {{ adapter.quote('PricingCategory') }},
        cast(null as string) as {{ adapter.quote('CommitmentDiscountId') }},
        cast(null as string) as {{ adapter.quote('CommitmentDiscountName') }},
        cast(null as string) as {{ adapter.quote('CommitmentDiscountCategory') }},
        cast(null as string) as {{ adapter.quote('CommitmentDiscountType') }},
        cast(null as string) as {{ adapter.quote('CommitmentDiscountStatus') }},
        {{ units_money_text('line_units') }} as {{ adapter.quote('BilledCost') }},
        {{ units_money_text('line_units') }} as {{ adapter.quote('EffectiveCost') }},
        cast(null as string) as {{ adapter.quote('Tags') }},
        item_type as native_charge_type,
        cast(null as string) as delivery_dataset,
        cast(null as string) as native_superseded_reason,
        source_file as filename,
        row_number() over (order by item_id, resource_id, hour_at) as source_row_number
    from lines

),

{{ typed_bill_charges('mapped', 'onprem') }}

select * from final
