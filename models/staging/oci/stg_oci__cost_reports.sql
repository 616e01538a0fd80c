-- Oracle Cloud cost report lines in the canonical FOCUS shape. OCI bills what the report says
-- (cost/myCost, both ledgers; no amortised view), per tenancy; the billing month is the month the
-- usage interval starts in. Corrections (lineItem/isCorrection, with the backreference of the line
-- they correct) are their own lines, ChargeClass Correction. `tags/<namespace>.<key>` columns become
-- Tags keyed `<namespace>.<key>`.
{%- set base = ref('base_oci__cost_reports') %}
{%- set tag_columns = columns_with_prefix(base, 'tags/') %}
with

source as (

    select * from {{ base }}

),

typed_interval as (

    select
        *,
        {{ parse_utc_timestamp('"lineItem/intervalUsageStart"') }} as interval_start_at
    from source

),

mapped as (

    select
        "lineItem/tenantId" as "BillingAccountId",
        cast(null as string) as "BillingAccountName",
        "product/compartmentId" as "SubAccountId",
        "product/compartmentName" as "SubAccountName",
        cast(null as string) as "InvoiceId",
        'Oracle' as "ProviderName",
        'Oracle' as "InvoiceIssuerName",
        'Oracle' as "PublisherName",
        "cost/currencyCode" as "BillingCurrency",
        strftime(date_trunc('month', interval_start_at), '%Y-%m-%dT%H:%M:%SZ') as "BillingPeriodStart",
        strftime(date_trunc('month', interval_start_at) + interval 1 month, '%Y-%m-%dT%H:%M:%SZ')
            as "BillingPeriodEnd",
        "lineItem/intervalUsageStart" as "ChargePeriodStart",
        "lineItem/intervalUsageEnd" as "ChargePeriodEnd",
        'Usage' as "ChargeCategory",
        case when lower("lineItem/isCorrection") = 'true' then 'Correction' end as "ChargeClass",
        'Usage-Based' as "ChargeFrequency",
        "product/Description" as "ChargeDescription",
        "product/service" as "ServiceName",
        cast(null as string) as "ServiceCategory",
        "product/resourceId" as "ResourceId",
        cast(null as string) as "ResourceName",
        cast(null as string) as "ResourceType",
        "product/region" as "RegionId",
        cast(null as string) as "RegionName",
        "product/availabilityDomain" as "AvailabilityZone",
        "cost/productSku" as "SkuId",
        cast(null as string) as "SkuPriceId",
        "cost/skuUnitDescription" as "PricingUnit",
        "usage/billedQuantity" as "PricingQuantity",
        "cost/skuUnitDescription" as "ConsumedUnit",
        "usage/billedQuantity" as "ConsumedQuantity",
        cast(null as string) as "ListCost",
        cast(null as string) as "ListUnitPrice",
        cast(null as string) as "ContractedCost",
        "cost/unitPrice" as "ContractedUnitPrice",
        'Standard' as "PricingCategory",
        cast(null as string) as "CommitmentDiscountId",
        cast(null as string) as "CommitmentDiscountName",
        cast(null as string) as "CommitmentDiscountCategory",
        cast(null as string) as "CommitmentDiscountType",
        cast(null as string) as "CommitmentDiscountStatus",
        "cost/myCost" as "BilledCost",
        "cost/myCost" as "EffectiveCost",
        {{ tag_columns_json(tag_columns, 'tags/') }} as "Tags",
        case when lower("lineItem/isCorrection") = 'true' then 'Correction' else 'Usage' end as native_charge_type,
        cast(null as string) as delivery_dataset,
        cast(null as string) as native_superseded_reason,
        filename,
        source_row_number
    from typed_interval

),

{{ typed_bill_charges('mapped', 'oci') }}

select * from final
