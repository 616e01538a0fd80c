-- Google Cloud Billing export rows in the canonical FOCUS shape. Each export row is a cost line
-- (`cost`, ChargeCategory from `cost_type`: regular = Usage, tax = Tax, adjustment and rounding error =
-- Adjustment), and each entry of its nested `credits` array is a credit line of its own on the same
-- resource, project and labels, so a discount follows the cost it discounts. Its tags are the
-- project's labels (`project.labels`) and the resource's (`labels`), the resource's winning on a key. The invoice month
-- (`invoice.month`, YYYYMM) decides the billing period, not the usage time. GPU SKUs ("Nvidia Tesla A100
-- GPU running in Americas") are lines apart from their VM, as GCP bills them. `cost` is FLOAT64 at the
-- source; its decimal text is taken as written.
-- struct fields (`credit.type`, `label.key`) read to sqlfluff as table qualifiers:
-- noqa: disable=RF03
with

source as (

    select * from {{ ref('base_gcp__billing_export') }}

),

rows_parsed as (

    select
        {{ gcp_field('billing_account_id') }} as billing_account_id,
        {{ gcp_field('project.id') }} as project_id,
        {{ gcp_field('project.name') }} as project_name,
        {{ gcp_field('service.description') }} as service_description,
        {{ gcp_field('sku.id') }} as sku_id,
        {{ gcp_field('sku.description') }} as sku_description,
        regexp_replace({{ gcp_field('usage_start_time') }}, ' UTC$', 'Z') as usage_start_time,
        regexp_replace({{ gcp_field('usage_end_time') }}, ' UTC$', 'Z') as usage_end_time,
        {{ gcp_field('invoice.month') }} as invoice_month,
        coalesce(lower({{ gcp_field('cost_type') }}), 'regular') as cost_type,
        {{ gcp_field('cost') }} as cost,
        {{ gcp_field('currency') }} as currency,
        coalesce({{ gcp_field('resource.global_name') }}, {{ gcp_field('resource.name') }}) as resource_id,
        {{ gcp_field('resource.name') }} as resource_name,
        {{ gcp_field('location.region') }} as region,
        {{ gcp_field('location.zone') }} as zone,
        {{ gcp_field('usage.amount_in_pricing_units') }} as pricing_quantity,
        {{ gcp_field('usage.pricing_unit') }} as pricing_unit,
        case
            when json_type(row_json, '$.labels') = 'ARRAY' then json_extract(row_json, '$.labels')
            else try_cast({{ gcp_field('labels') }} as json)
        end as labels,
        case
            when json_type(row_json, '$.project.labels') = 'ARRAY' then json_extract(row_json, '$.project.labels')
            else try_cast({{ gcp_field('project.labels') }} as json)
        end as project_labels,
        case
            when json_type(row_json, '$.credits') = 'ARRAY' then json_extract(row_json, '$.credits')
            else try_cast({{ gcp_field('credits') }} as json)
        end as credits,
        filename,
        source_row_number
    from source

),

label_entries as (

    select
        *,
        list_transform(
            from_json(labels, '[{"key": "VARCHAR", "value": "VARCHAR"}]'),
            lambda label: { 'k': label.key, 'v': label.value }
        ) as resource_label_entries,
        list_transform(
            from_json(project_labels, '[{"key": "VARCHAR", "value": "VARCHAR"}]'),
            lambda label: { 'k': label.key, 'v': label.value }
        ) as project_label_entries
    from rows_parsed

),

with_tags as (

    select
        * exclude (resource_label_entries, project_label_entries),
        -- the line's tags: its project's labels, then its resource's labels, which win on the same key
        case
            when resource_label_entries is not null or project_label_entries is not null
                then cast(to_json(map_from_entries(list_concat(
                        list_filter(
                            coalesce(project_label_entries, []),
                            lambda project_label: not list_contains(
                                list_transform(
                                    coalesce(resource_label_entries, []), lambda resource_label: resource_label.k
                                ),
                                project_label.k
                            )
                        ),
                        coalesce(resource_label_entries, [])
                    ))) as string)
        end as tags_json,
        invoice_month[1:4] || '-' || invoice_month[5:6] || '-01T00:00:00Z' as billing_period_start
    from label_entries

),

cost_lines as (

    select
        *,
        case
            when cost_type = 'regular' then 'Usage'
            when cost_type = 'tax' then 'Tax'
            else 'Adjustment'
        end as charge_category,
        cost_type as native_charge_type,
        sku_description as charge_description,
        cost as amount,
        source_row_number * 1000 as line_number
    from with_tags

),

credit_entries as (

    select
        with_tags.*,
        unnest(from_json(
            with_tags.credits,
            '[{"name": "VARCHAR", "amount": "VARCHAR", "type": "VARCHAR", "id": "VARCHAR", "full_name": "VARCHAR"}]'
        )) as credit
    from with_tags
    where json_array_length(with_tags.credits) > 0

),

credit_lines as (

    select
        * exclude (credit),
        'Credit' as charge_category,
        'credit:' || coalesce(credit.type, 'UNKNOWN') as native_charge_type,
        coalesce(credit.full_name, credit.name) as charge_description,
        credit.amount,
        source_row_number * 1000 + row_number() over (
            partition by filename, source_row_number
            order by credit.id, credit.name, credit.amount
        ) as line_number
    from credit_entries

),

lines as (

    select * from cost_lines
    union all by name
    select * from credit_lines

),

mapped as (

    select
        billing_account_id as "BillingAccountId",
        cast(null as string) as "BillingAccountName",
        project_id as "SubAccountId",
        project_name as "SubAccountName",
        cast(null as string) as "InvoiceId",
        'Google Cloud' as "ProviderName",
        'Google' as "InvoiceIssuerName",
        'Google' as "PublisherName",
        currency as "BillingCurrency",
        billing_period_start as "BillingPeriodStart",
        strftime(
            cast(try_cast(billing_period_start as timestamptz) at time zone 'UTC' as timestamp) + interval 1 month,
            '%Y-%m-%dT%H:%M:%SZ'
        ) as "BillingPeriodEnd",
        usage_start_time as "ChargePeriodStart",
        usage_end_time as "ChargePeriodEnd",
        charge_category as "ChargeCategory",
        case when cost_type = 'adjustment' then 'Correction' end as "ChargeClass",
        'Usage-Based' as "ChargeFrequency",
        charge_description as "ChargeDescription",
        service_description as "ServiceName",
        cast(null as string) as "ServiceCategory",
        resource_id as "ResourceId",
        resource_name as "ResourceName",
        cast(null as string) as "ResourceType",
        region as "RegionId",
        cast(null as string) as "RegionName",
        zone as "AvailabilityZone",
        sku_id as "SkuId",
        cast(null as string) as "SkuPriceId",
        pricing_unit as "PricingUnit",
        pricing_quantity as "PricingQuantity",
        pricing_unit as "ConsumedUnit",
        pricing_quantity as "ConsumedQuantity",
        cast(null as string) as "ListCost",
        cast(null as string) as "ListUnitPrice",
        cast(null as string) as "ContractedCost",
        cast(null as string) as "ContractedUnitPrice",
        cast(null as string) as "PricingCategory",
        cast(null as string) as "CommitmentDiscountId",
        cast(null as string) as "CommitmentDiscountName",
        cast(null as string) as "CommitmentDiscountCategory",
        cast(null as string) as "CommitmentDiscountType",
        cast(null as string) as "CommitmentDiscountStatus",
        amount as "BilledCost",
        amount as "EffectiveCost",
        tags_json as "Tags",
        native_charge_type,
        cast(null as string) as delivery_dataset,
        cast(null as string) as native_superseded_reason,
        filename,
        line_number as source_row_number
    from lines

),

{{ typed_bill_charges('mapped', 'gcp') }}

select * from final
