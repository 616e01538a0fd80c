-- Azure Cost Management exports (EA and MCA spellings) in the canonical FOCUS shape, combining the two
-- datasets as Microsoft's FOCUS conversion does. A file is the amortised dataset when its path says so
-- (`amortized` / `amortised`), else the actual dataset. For a billing account and month:
--   actual rows:    BilledCost = the cost; EffectiveCost = the cost, except a reservation / savings-plan
--                   purchase, whose EffectiveCost is 0 once the amortised dataset is there (it is spread
--                   over the usage rows instead);
--   amortised rows: commitment usage (PricingModel Reservation / SavingsPlan, ChargeType Usage or Unused*)
--                   with BilledCost 0 and EffectiveCost = the amortised cost;
--   a row the other dataset already holds (on-demand usage in the amortised file, commitment usage
--   in the actual file, whose billed cost is 0) is kept as superseded with the reason, never counted twice.
-- Without the other dataset every row counts alone. EA Tags (`"a": "b","c": "d"`, not JSON) get braces.
with

source as (

    select * from {{ ref('base_azure__cost_details') }}

),

spelled as (

    select
        coalesce("BillingAccountId", "BillingProfileId") as billing_account_id,
        coalesce("BillingAccountName", "BillingProfileName") as billing_account_name,
        coalesce("SubscriptionId", "SubscriptionGuid") as subscription_id,
        "SubscriptionName" as subscription_name,
        "InvoiceId" as invoice_id,
        coalesce("Date", "UsageDateTime") as usage_date_raw,
        "BillingPeriodStartDate" as billing_period_start_raw,
        "BillingPeriodEndDate" as billing_period_end_raw,
        coalesce("CostInBillingCurrency", "Cost", "PreTaxCost") as cost,
        coalesce("BillingCurrencyCode", "BillingCurrency", "Currency") as billing_currency,
        coalesce("ChargeType", 'Usage') as charge_type,
        coalesce("PricingModel", 'OnDemand') as pricing_model,
        "Frequency" as frequency,
        coalesce("ResourceId", "InstanceId") as resource_id,
        "ResourceName" as resource_name,
        "ResourceLocation" as resource_location,
        "AvailabilityZone" as availability_zone,
        "MeterCategory" as meter_category,
        "MeterSubCategory" as meter_sub_category,
        "MeterName" as meter_name,
        "MeterId" as meter_id,
        coalesce("ProductName", "Product") as product_name,
        "ServiceFamily" as service_family,
        "Quantity" as quantity,
        "UnitOfMeasure" as unit_of_measure,
        case
            when nullif(trim("Tags"), '') is null then null
            when starts_with(trim("Tags"), '{') then trim("Tags")
            else '{' || trim("Tags") || '}'
        end as tags_json,
        coalesce(nullif("benefitId", ''), nullif("ReservationId", '')) as commitment_id,
        coalesce("PublisherName", 'Microsoft') as publisher_name,
        case when regexp_matches(lower(filename), 'amorti[sz]ed') then 'amortized' else 'actual' end
            as dataset,
        filename,
        source_row_number
    from source

),

classified as (

    select
        *,
        pricing_model in ('Reservation', 'SavingsPlan')
        and charge_type in ('Usage', 'UnusedReservation', 'UnusedSavingsPlan') as is_commitment_usage,
        pricing_model in ('Reservation', 'SavingsPlan') and charge_type = 'Purchase' as is_commitment_purchase,
        -- US dates in EA exports (9/2/2023, 09/21/2023), ISO dates in newer ones
        coalesce(
            strftime(try_strptime(trim(usage_date_raw), '%m/%d/%Y'), '%Y-%m-%dT%H:%M:%SZ'), usage_date_raw
        ) as usage_date_text,
        coalesce(
            strftime(try_strptime(trim(billing_period_start_raw), '%m/%d/%Y'), '%Y-%m-%dT%H:%M:%SZ'),
            billing_period_start_raw
        ) as billing_period_start_text,
        coalesce(
            strftime(try_strptime(trim(billing_period_end_raw), '%m/%d/%Y'), '%Y-%m-%dT%H:%M:%SZ'),
            billing_period_end_raw
        ) as billing_period_end_text
    from spelled

),

datasets as (

    select
        *,
        count(case when dataset = 'actual' then 1 end) over (
            partition by billing_account_id, billing_period_start_text
        ) > 0 as has_actual,
        count(case when dataset = 'amortized' then 1 end) over (
            partition by billing_account_id, billing_period_start_text
        ) > 0 as has_amortized
    from classified

),

mapped as (

    select
        billing_account_id as "BillingAccountId",
        billing_account_name as "BillingAccountName",
        subscription_id as "SubAccountId",
        subscription_name as "SubAccountName",
        invoice_id as "InvoiceId",
        'Microsoft' as "ProviderName",
        'Microsoft' as "InvoiceIssuerName",
        publisher_name as "PublisherName",
        billing_currency as "BillingCurrency",
        billing_period_start_text as "BillingPeriodStart",
        -- EA's BillingPeriodEndDate is the month's last day; FOCUS ends are exclusive
        strftime(
            try_cast(try_cast(billing_period_end_text as timestamptz) at time zone 'UTC' as timestamp)
            + interval 1 day,
            '%Y-%m-%dT%H:%M:%SZ'
        ) as "BillingPeriodEnd",
        usage_date_text as "ChargePeriodStart",
        strftime(
            try_cast(try_cast(usage_date_text as timestamptz) at time zone 'UTC' as timestamp) + interval 1 day,
            '%Y-%m-%dT%H:%M:%SZ'
        ) as "ChargePeriodEnd",
        case
            when charge_type in ('Usage', 'UnusedReservation', 'UnusedSavingsPlan') then 'Usage'
            when charge_type = 'Purchase' then 'Purchase'
            when charge_type = 'Tax' then 'Tax'
            when charge_type = 'Refund' then 'Credit'
            else 'Adjustment'
        end as "ChargeCategory",
        case when charge_type = 'Refund' then 'Correction' end as "ChargeClass",
        case
            when charge_type = 'Purchase' and frequency = 'Recurring' then 'Recurring'
            when charge_type = 'Purchase' then 'One-Time'
            else 'Usage-Based'
        end as "ChargeFrequency",
        product_name as "ChargeDescription",
        meter_category as "ServiceName",
        service_family as "ServiceCategory",
        resource_id as "ResourceId",
        resource_name as "ResourceName",
        meter_sub_category as "ResourceType",
        resource_location as "RegionId",
        cast(null as string) as "RegionName",
        availability_zone as "AvailabilityZone",
        meter_id as "SkuId",
        cast(null as string) as "SkuPriceId",
        unit_of_measure as "PricingUnit",
        quantity as "PricingQuantity",
        unit_of_measure as "ConsumedUnit",
        quantity as "ConsumedQuantity",
        cast(null as string) as "ListCost",
        cast(null as string) as "ListUnitPrice",
        cast(null as string) as "ContractedCost",
        cast(null as string) as "ContractedUnitPrice",
        case when pricing_model in ('Reservation', 'SavingsPlan') then 'Committed' else 'Standard' end
            as "PricingCategory",
        commitment_id as "CommitmentDiscountId",
        cast(null as string) as "CommitmentDiscountName",
        cast(null as string) as "CommitmentDiscountCategory",
        pricing_model as "CommitmentDiscountType",
        case
            when charge_type in ('UnusedReservation', 'UnusedSavingsPlan') then 'Unused'
            when is_commitment_usage then 'Used'
        end as "CommitmentDiscountStatus",
        case when dataset = 'amortized' and is_commitment_usage then '0' else cost end as "BilledCost",
        case when dataset = 'actual' and is_commitment_purchase and has_amortized then '0' else cost end
            as "EffectiveCost",
        tags_json as "Tags",
        charge_type as native_charge_type,
        dataset as delivery_dataset,
        case
            when dataset = 'actual' and is_commitment_usage and has_amortized
                then 'represented_by_amortized_export: commitment usage'
            when dataset = 'amortized' and not is_commitment_usage and has_actual
                then 'represented_by_actual_export: ' || charge_type
        end as native_superseded_reason,
        filename,
        source_row_number
    from datasets

),

{{ typed_bill_charges('mapped', 'azure') }}

select * from final
