-- AWS Cost and Usage Report lines (legacy CUR and CUR 2.0) in the canonical FOCUS shape.
-- Billed cost is the unblended cost of every line (the invoice); effective cost follows AWS's
-- amortisation rules per line item type (the CUR user guide's amortised cost):
--   SavingsPlanCoveredUsage  savingsPlan/SavingsPlanEffectiveCost
--   SavingsPlanRecurringFee  TotalCommitmentToDate - UsedCommitment (the unused commitment)
--   SavingsPlanNegation, SavingsPlanUpfrontFee, Fee of a reservation (upfront)   0
--   DiscountedUsage          reservation/EffectiveCost
--   RIFee                    UnusedAmortizedUpfrontFeeForBillingPeriod + UnusedRecurringFee
--   everything else (Usage, Fee, Tax, Credit, Refund, EdpDiscount, BundledDiscount...)  UnblendedCost
{%- set base = ref('base_aws_cur__line_items') %}
{%- set legacy_tags = columns_with_prefix(base, 'resourceTags/') %}
with

source as (

    select * from {{ base }}

),

spelled as (

    -- one name per field, whichever CUR version the file is
    select
        {% for legacy, cur2 in aws_cur_column_pairs() -%}
            coalesce("{{ legacy }}", "{{ cur2 }}") as {{ cur2 }},
        {% endfor -%}
        coalesce(
            {{ tag_columns_json(legacy_tags, 'resourceTags/') }},
            -- CUR 2.0 resource_tags: a JSON object (a map in Parquet) keyed user_<key> / user:<key>
            cast(to_json(map_from_entries(list_transform(
                json_keys(try_cast(resource_tags as json)),
                lambda tag_key: {
                    'k': regexp_replace(tag_key, '^user[:_]', ''),
                    'v': json_extract_string(try_cast(resource_tags as json), '$."' || tag_key || '"')
                }
            ))) as string)
        ) as tags_json,
        filename,
        source_row_number
    from source

),

mapped as (

    select
        bill_payer_account_id as "BillingAccountId",
        bill_payer_account_name as "BillingAccountName",
        line_item_usage_account_id as "SubAccountId",
        line_item_usage_account_name as "SubAccountName",
        bill_invoice_id as "InvoiceId",
        'AWS' as "ProviderName",
        coalesce(bill_invoicing_entity, 'Amazon Web Services, Inc.') as "InvoiceIssuerName",
        'Amazon Web Services, Inc.' as "PublisherName",
        line_item_currency_code as "BillingCurrency",
        bill_billing_period_start_date as "BillingPeriodStart",
        bill_billing_period_end_date as "BillingPeriodEnd",
        line_item_usage_start_date as "ChargePeriodStart",
        line_item_usage_end_date as "ChargePeriodEnd",
        case
            when line_item_line_item_type in (
                    'Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage',
                    'SavingsPlanNegation'
                ) then 'Usage'
            when line_item_line_item_type in ('RIFee', 'Fee', 'SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee')
                then 'Purchase'
            when line_item_line_item_type = 'Tax' then 'Tax'
            when line_item_line_item_type = 'Refund' then 'Adjustment'
            else 'Credit'
        end as "ChargeCategory",
        case when line_item_line_item_type = 'Refund' then 'Correction' end as "ChargeClass",
        case
            when line_item_line_item_type in ('RIFee', 'SavingsPlanRecurringFee') then 'Recurring'
            when line_item_line_item_type in ('Fee', 'SavingsPlanUpfrontFee') then 'One-Time'
            else 'Usage-Based'
        end as "ChargeFrequency",
        line_item_line_item_description as "ChargeDescription",
        coalesce(product_product_name, line_item_product_code) as "ServiceName",
        product_product_family as "ServiceCategory",
        line_item_resource_id as "ResourceId",
        cast(null as string) as "ResourceName",
        product_instance_type as "ResourceType",
        product_region_code as "RegionId",
        cast(null as string) as "RegionName",
        line_item_availability_zone as "AvailabilityZone",
        product_sku as "SkuId",
        cast(null as string) as "SkuPriceId",
        pricing_unit as "PricingUnit",
        line_item_usage_amount as "PricingQuantity",
        pricing_unit as "ConsumedUnit",
        line_item_usage_amount as "ConsumedQuantity",
        pricing_public_on_demand_cost as "ListCost",
        cast(null as string) as "ListUnitPrice",
        cast(null as string) as "ContractedCost",
        cast(null as string) as "ContractedUnitPrice",
        cast(null as string) as "PricingCategory",
        coalesce(
            nullif(reservation_reservation_a_r_n, ''), nullif(savings_plan_savings_plan_a_r_n, '')
        ) as "CommitmentDiscountId",
        cast(null as string) as "CommitmentDiscountName",
        cast(null as string) as "CommitmentDiscountCategory",
        cast(null as string) as "CommitmentDiscountType",
        case
            when line_item_line_item_type in ('DiscountedUsage', 'SavingsPlanCoveredUsage') then 'Used'
        end as "CommitmentDiscountStatus",
        line_item_unblended_cost as "BilledCost",
        case
            when line_item_line_item_type = 'SavingsPlanCoveredUsage' then savings_plan_savings_plan_effective_cost
            when line_item_line_item_type = 'SavingsPlanRecurringFee'
                then cast(
                        try_cast(
                            coalesce(nullif(trim(savings_plan_total_commitment_to_date), ''), '0') as {{ money_type() }}
                        )
                        - try_cast(coalesce(nullif(trim(savings_plan_used_commitment), ''), '0') as {{ money_type() }})
                        as string
                    )
            when line_item_line_item_type in ('SavingsPlanNegation', 'SavingsPlanUpfrontFee') then '0'
            when line_item_line_item_type = 'Fee' and coalesce(reservation_reservation_a_r_n, '') <> '' then '0'
            when line_item_line_item_type = 'DiscountedUsage' then reservation_effective_cost
            when line_item_line_item_type = 'RIFee' then {{ money_text_sum([
                'reservation_unused_amortized_upfront_fee_for_billing_period',
                'reservation_unused_recurring_fee',
            ]) }}
            else line_item_unblended_cost
        end as "EffectiveCost",
        tags_json as "Tags",
        line_item_line_item_type as native_charge_type,
        cast(null as string) as delivery_dataset,
        cast(null as string) as native_superseded_reason,
        filename,
        source_row_number
    from spelled

),

{{ typed_bill_charges('mapped', 'aws_cur') }}

select * from final
