{#- One typing step for every billing format. A native staging model first maps its provider's columns
    to FOCUS-named text columns (every name in focus_columns(), plus filename, source_row_number,
    native_charge_type, delivery_dataset (a dataset that is delivered on its own, e.g. Azure's actual and
    amortised exports; null for one dataset) and native_superseded_reason (a line another line of the same
    bill already represents, or null)), then calls this macro, which emits the CTEs `parsed`, `identified`,
    `deliveries` and `final`: money as DECIMAL(38, 18), UTC timestamps, tags as JSON with the ownership
    tags pulled out, quarantine and superseded-redelivery reasons.
    Restatements: a delivery is a folder. Of the deliveries of one provider, billing account, month and
    dataset the newest wins, ordered by (1) the delivery's own time when its folder name is one
    (20261104T000000Z, 2026-11-04T00:00:00Z, 202611040000: CUR 2.0 / FOCUS / time-stamped exports), else
    the newest modification time of its files (read_blob's last_modified, via stg_landing__files: legacy
    CUR assemblyId GUID folders carry no order), then (2) that modification time, then (3) the folder name. So every format is typed, quarantined
    and restated by the same rules, and the union of all of them has one shape. -#}
{% macro typed_bill_charges(source_cte, source_format) -%}
landed_files as (

    select
        source_file,
        last_modified_at
    from {{ ref('stg_landing__files') }}

),

parsed as (

    select
        -- where the row came from
        filename as source_file,
        source_row_number,
        native_charge_type,
        delivery_dataset,
        native_superseded_reason,
        {#- FOCUS 1.3+ columns (FOCUS files only) count when present: concat_ws skips nulls, so the ids of lines
            without them stay what they were -#}
        {%- set hashed = [] -%}
        {%- for column in focus_columns() if column not in focus_columns_since_1_3() -%}
            {%- do hashed.append("coalesce(" ~ adapter.quote(column) ~ ", '<null>')") -%}
        {%- endfor -%}
        {%- if source_format == 'focus' -%}
            {%- for column in focus_columns_since_1_3() -%}{%- do hashed.append(adapter.quote(column)) -%}{%- endfor -%}
        {%- endif %}
        md5(concat_ws(
            '|',
            {{ hashed | join(",\n            ") }}
        )) as content_hash,

        -- ids
        nullif(trim(BillingAccountId), '') as billing_account_id,
        nullif(trim(SubAccountId), '') as sub_account_id,
        nullif(trim(InvoiceId), '') as invoice_id,
        nullif(trim(ResourceId), '') as resource_id,
        nullif(trim(SkuId), '') as sku_id,

        -- strings
        BillingAccountName as billing_account_name,
        SubAccountName as sub_account_name,
        {% if source_format == 'focus' -%}
        -- FOCUS 1.3 / 1.4: ServiceProviderName replaces ProviderName (deprecated in 1.3, gone in 1.4)
        coalesce(nullif(trim(ServiceProviderName), ''), ProviderName) as provider_name,
        {%- else -%}
        ProviderName as provider_name,
        {%- endif %}
        InvoiceIssuerName as invoice_issuer_name,
        ChargeCategory as charge_category,
        ChargeClass as charge_class,
        ChargeFrequency as charge_frequency,
        ChargeDescription as charge_description,
        ServiceName as service_name,
        ServiceCategory as service_category,
        ResourceName as resource_name,
        ResourceType as resource_type,
        RegionId as region_id,
        AvailabilityZone as availability_zone,
        PricingUnit as pricing_unit,
        ConsumedUnit as consumed_unit,
        CommitmentDiscountId as commitment_discount_id,
        CommitmentDiscountStatus as commitment_discount_status,
        upper(trim(coalesce(
            BillingCurrency{% if var('gpucost_default_billing_currency', none) %},
            '{{ var("gpucost_default_billing_currency") }}'{% endif %}
        ))) as billing_currency,
        Tags as tags_raw,
        {{ json_or_null('Tags') }} as tags,

        -- money (exact) and quantities
        {{ dbt.safe_cast('trim(BilledCost)', money_type()) }} as billed_cost,
        {{ dbt.safe_cast('trim(EffectiveCost)', money_type()) }} as effective_cost,
        {{ dbt.safe_cast('trim(ListCost)', money_type()) }} as list_cost,
        {{ dbt.safe_cast('trim(ContractedCost)', money_type()) }} as contracted_cost,
        {{ dbt.safe_cast('trim(ConsumedQuantity)', 'decimal(38, 12)') }} as consumed_quantity,
        {{ dbt.safe_cast('trim(PricingQuantity)', 'decimal(38, 12)') }} as pricing_quantity,

        -- raw money text, kept to explain a line that cannot be parsed
        BilledCost as billed_cost_raw,
        EffectiveCost as effective_cost_raw,

        -- timestamps (UTC)
        {{ parse_utc_timestamp('BillingPeriodStart') }} as billing_period_start_at,
        {{ parse_utc_timestamp('BillingPeriodEnd') }} as billing_period_end_at,
        {{ parse_utc_timestamp('ChargePeriodStart') }} as charge_period_start_at,
        {{ parse_utc_timestamp('ChargePeriodEnd') }} as charge_period_end_at,
        ChargePeriodStart as charge_period_start_raw,
        ChargePeriodEnd as charge_period_end_raw

    from {{ source_cte }}

),

identified as (

    select
        parsed.*,
        {% if source_format != 'focus' %}'{{ source_format }}:' || {% endif %}parsed.content_hash || '-'
        || cast(row_number() over (
            partition by parsed.content_hash order by parsed.source_file, parsed.source_row_number
        ) as string) as charge_id,
        -- a delivery is a folder: a month landed again in another folder (a restated export) replaces it
        regexp_replace(replace(parsed.source_file, '\\', '/'), '/[^/]*$', '') as delivery_folder,
        landed_files.last_modified_at as file_modified_at
    from parsed
    left join landed_files on parsed.source_file = landed_files.source_file

),

delivery_times as (

    select
        *,
        -- the export's own delivery time, when the folder's name is one
        {{ parse_delivery_timestamp("regexp_extract(delivery_folder, '[^/]*$', 0)") }} as delivery_named_at,
        max(file_modified_at) over (partition by delivery_folder) as delivery_modified_at
    from identified

),

deliveries as (

    select
        *,
        first_value(delivery_folder) over (
            partition by provider_name, billing_account_id, billing_period_start_at, delivery_dataset
            order by
                coalesce(delivery_named_at, delivery_modified_at) desc nulls last,
                delivery_modified_at desc nulls last,
                delivery_folder desc
        ) as latest_delivery_folder
    from delivery_times

),

final as (

    select
        charge_id,
        billing_account_id,
        sub_account_id,
        coalesce(invoice_id, '') as invoice_id,
        resource_id,
        sku_id,
        billing_account_name,
        sub_account_name,
        coalesce(provider_name, '') as provider_name,
        invoice_issuer_name,
        charge_category,
        charge_class,
        charge_frequency,
        charge_description,
        service_name,
        service_category,
        resource_name,
        resource_type,
        region_id,
        availability_zone,
        pricing_unit,
        consumed_unit,
        commitment_discount_id,
        commitment_discount_status,
        '{{ source_format }}' as source_format,
        native_charge_type,
        billing_currency,
        tags_raw,
        tags,
        {{ owner_tag_value('tags', 'project') }} as tag_project_id,
        {{ owner_tag_value('tags', 'team') }} as tag_team_id,
        {{ owner_tag_value('tags', 'user') }} as tag_user_id,
        billed_cost,
        effective_cost,
        list_cost,
        contracted_cost,
        consumed_quantity,
        pricing_quantity,
        billed_cost_raw,
        effective_cost_raw,
        delivery_folder <> latest_delivery_folder or native_superseded_reason is not null as is_superseded,
        case
            when delivery_folder <> latest_delivery_folder
                then 'superseded_by_redelivery: ' || latest_delivery_folder
            when native_superseded_reason is not null then native_superseded_reason
            when {{ regexp_search() }}(trim(billed_cost_raw), '\.[0-9]{19,}')
                then 'BilledCost has more than 18 decimal places: ' || billed_cost_raw
            when {{ regexp_search() }}(trim(effective_cost_raw), '\.[0-9]{19,}')
                then 'EffectiveCost has more than 18 decimal places: ' || effective_cost_raw
            when billed_cost is null then 'unparseable BilledCost: ' || coalesce(billed_cost_raw, '<null>')
            when effective_cost is null then 'unparseable EffectiveCost: ' || coalesce(effective_cost_raw, '<null>')
            when billing_currency is null or not {{ regexp_search() }}(billing_currency, '^[A-Z]{3}$')
                then 'invalid BillingCurrency'
            when billing_period_start_at is null then 'invalid BillingPeriodStart'
        end as quarantine_reason,
        case
            when charge_period_start_at is null or charge_period_end_at is null
                then 'invalid_charge_period: '
                    || coalesce(charge_period_start_raw, '<null>') || ' / ' || coalesce(charge_period_end_raw, '<null>')
            when charge_period_end_at <= charge_period_start_at then 'invalid_charge_period: end not after start'
        end as invalid_period_reason,
        cast(billing_period_start_at as date) as billing_period_start,
        billing_period_start_at,
        billing_period_end_at,
        charge_period_start_at,
        charge_period_end_at,
        delivery_folder,
        source_file,
        source_row_number
    from deliveries

)
{%- endmacro %}
