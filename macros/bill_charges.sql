{#- One typing step for every billing format. A native staging model first maps its provider's columns
    to FOCUS-named text columns (every name in focus_columns(), plus filename, source_row_number,
    native_charge_type, delivery_dataset (a dataset that is delivered on its own, e.g. Azure's actual and
    amortised exports; null for one dataset) and native_superseded_reason (a line another line of the same
    bill already represents, or null)), then calls this macro, which emits the CTEs `parsed`, `identified`,
    `deliveries` and `final`: money as DECIMAL(38, 18), UTC timestamps, tags as JSON with the ownership
    tags pulled out, quarantine and superseded-redelivery reasons.
    Deliveries and restatements (macros/bill_deliveries.sql says what a delivery is per provider layout):
    of the deliveries of one provider, billing account, month and dataset the newest wins, ordered by
    (1) a delivery an outer provider manifest names current, (2) the delivery's time from its manifest or
    its path (a delivery with one beats one without), (3) the delivery folder's name (the last by name wins).
    Never by file modification time: a re-sync touches files. The lines of the other deliveries are
    superseded.
    Row identity: a row's normalised values (money and unit prices as DECIMAL(38, 18), quantities as
    decimals, timestamps as UTC, text trimmed with blank and NULL as null, tags without whitespace)
    hashed. The same rows in several files of the current deliveries (one export landed as .csv,
    .csv.gz and .parquet; a partial re-export under another name) count once: each copy
    after the first file's is a duplicate (`duplicate_of: <file> row <n>`), kept out of the totals. Identical
    rows inside one file stay separate charges (FOCUS 1.0 has no line id).
    Precision: money with more than 18 decimals (also in scientific notation) and the lines of files whose
    money is beyond the exact range (a currency's current lines totalling 9e18 or more in absolute value: the
    allocation splits whole units as 64-bit integers) are quarantined, their money kept only as text.
    So every format is typed, quarantined and restated by the same rules, and the union of all of them has
    one shape. -#}
{% macro typed_bill_charges(source_cte, source_format) -%}
{#- the FOCUS 1.3+ provider columns exist in FOCUS files only (native staging maps the older names) -#}
{%- set text_columns = [] -%}
{%- for column in focus_columns() if column not in money_and_time_columns() -%}
    {%- if source_format == 'focus' or column not in focus_columns_since_1_3() -%}
        {%- do text_columns.append(column) -%}
    {%- endif -%}
{%- endfor -%}
bill_files as (

    select
        source_file,
        delivery_folder,
        delivery_at,
        is_current_by_manifest
    from {{ ref('stg_landing__bill_files') }}

),

parsed as (

    select
        -- where the row came from
        filename as source_file,
        source_row_number,
        native_charge_type,
        delivery_dataset,
        native_superseded_reason,
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
        {% if source_format == 'focus' -%}
        -- FOCUS 1.3 / 1.4: the entity that hosts the resource; files before 1.3 have none
        nullif(trim(HostProviderName), '') as host_provider_name,
        {%- else -%}
        cast(null as string) as host_provider_name,
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
        ListCost as list_cost_raw,
        ContractedCost as contracted_cost_raw,
        ConsumedQuantity as consumed_quantity_raw,
        PricingQuantity as pricing_quantity_raw,
        {%- for column in text_columns %}
        -- blank and the literal NULL are null in every file type (CSV reads them so; Parquet keeps '')
        case
            when trim({{ adapter.quote(column) }}) not in ('', 'NULL') then trim({{ adapter.quote(column) }})
        end as text_{{ column | lower }},
        {%- endfor %}

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
        -- a row's identity: its normalised values (not its bytes, not its file)
        md5(concat_ws(
            '|',
            {% for column in text_columns -%}
                {%- if column.endswith('UnitPrice') -%}
                coalesce(
                    cast({{ dbt.safe_cast('text_' ~ column | lower, money_type()) }} as string),
                    text_{{ column | lower }},
                    '<null>'
                ),
                {%- else -%}
                coalesce(text_{{ column | lower }}, '<null>'),
                {%- endif %}
            {% endfor -%}
            coalesce(cast(billed_cost as string), billed_cost_raw, '<null>'),
            coalesce(cast(effective_cost as string), effective_cost_raw, '<null>'),
            coalesce(cast(list_cost as string), list_cost_raw, '<null>'),
            coalesce(cast(contracted_cost as string), contracted_cost_raw, '<null>'),
            coalesce(cast(consumed_quantity as string), consumed_quantity_raw, '<null>'),
            coalesce(cast(pricing_quantity as string), pricing_quantity_raw, '<null>'),
            coalesce(cast(billing_period_start_at as string), '<null>'),
            coalesce(cast(billing_period_end_at as string), '<null>'),
            coalesce(cast(charge_period_start_at as string), charge_period_start_raw, '<null>'),
            coalesce(cast(charge_period_end_at as string), charge_period_end_raw, '<null>'),
            coalesce(
                nullif(replace(replace(replace(tags_raw, ' ', ''), chr(10), ''), chr(13), ''), ''), '<null>'
            ),
            coalesce(native_charge_type, '<null>'),
            coalesce(delivery_dataset, '<null>')
        )) as content_hash,
        coalesce(
            bill_files.delivery_folder, regexp_replace(replace(parsed.source_file, '\\', '/'), '/[^/]*$', '')
        ) as delivery_folder,
        bill_files.delivery_at as file_delivery_at,
        coalesce(bill_files.is_current_by_manifest, false) as file_is_current_by_manifest
    from parsed
    left join bill_files on parsed.source_file = bill_files.source_file

),

delivery_times as (

    select
        *,
        max(file_delivery_at) over (partition by delivery_folder) as delivery_at,
        max(case when file_is_current_by_manifest then 1 else 0 end) over (partition by delivery_folder)
            as delivery_manifest_rank
    from identified

),

deliveries as (

    select
        *,
        first_value(delivery_folder) over (
            partition by provider_name, billing_account_id, billing_period_start_at, delivery_dataset
            order by
                delivery_manifest_rank desc,
                delivery_at desc nulls last,
                delivery_folder desc
        ) as latest_delivery_folder
    from delivery_times

),

occurrences as (

    select
        *,
        delivery_folder <> latest_delivery_folder or native_superseded_reason is not null as is_replaced,
        -- the n-th copy of a row inside its file (identical rows in one file are separate charges)
        row_number() over (
            partition by source_file, content_hash order by source_row_number
        ) as occurrence
    from deliveries

),

copies as (

    select
        *,
        first_value(source_file || ' row ' || cast(source_row_number as string)) over (
            partition by is_replaced, content_hash, occurrence
            order by source_file, source_row_number
        ) as first_copy,
        first_value(source_file) over (
            partition by is_replaced, content_hash, occurrence
            order by source_file, source_row_number
        ) as first_copy_file
    from occurrences

),

magnitudes as (

    -- money beyond the exact range: the absolute money of each file's current lines, files of a currency
    -- taken from the smallest; a file that takes the total to 9e18 or more is held out (the allocation core
    -- splits whole units as 64-bit integers, below 9.2e18; DECIMAL(38, 18) sums stop at 1e20)
    select
        *,
        sum(file_magnitude) over (
            partition by billing_currency
            order by file_magnitude, source_file
            rows between unbounded preceding and current row
        ) as cumulative_magnitude
    from (
        select
            billing_currency,
            source_file,
            sum(
                greatest(
                    abs(cast(coalesce(billed_cost, 0) as double)),
                    abs(cast(coalesce(effective_cost, 0) as double)),
                    abs(cast(coalesce(list_cost, 0) as double)),
                    abs(cast(coalesce(contracted_cost, 0) as double))
                )
            ) as file_magnitude
        from copies
        where not is_replaced and source_file = first_copy_file
        group by 1, 2
    ) as file_magnitudes

),

checked as (

    select
        copies.*,
        not copies.is_replaced and copies.source_file <> copies.first_copy_file as is_duplicate,
        coalesce(magnitudes.cumulative_magnitude >= 9e18, false) as is_overflow,
        magnitudes.file_magnitude
    from copies
    left join magnitudes
        on copies.source_file = magnitudes.source_file
        and copies.billing_currency is not distinct from magnitudes.billing_currency
        and not copies.is_replaced

),

final as (

    select
        {% if source_format != 'focus' %}'{{ source_format }}:' || {% endif %}content_hash || '-'
        || cast(occurrence as string)
        || case when delivery_dataset is not null then '-' || delivery_dataset else '' end
        || case when is_replaced or is_duplicate then '@' || md5(source_file) else '' end as charge_id,
        billing_account_id,
        sub_account_id,
        coalesce(invoice_id, '') as invoice_id,
        resource_id,
        sku_id,
        billing_account_name,
        sub_account_name,
        coalesce(provider_name, '') as provider_name,
        -- FOCUS 1.3+: HostProviderName as billed; before 1.3 (and in native bills) the service provider
        -- hosts what it sells, so the host is the provider
        coalesce(host_provider_name, provider_name, '') as host_provider_name,
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
        -- further FOCUS columns, as billed (text, blank and NULL as null; unit prices exact)
        text_regionname as region_name,
        text_skupriceid as sku_price_id,
        text_pricingcategory as pricing_category,
        text_commitmentdiscountcategory as commitment_discount_category,
        text_commitmentdiscountname as commitment_discount_name,
        text_commitmentdiscounttype as commitment_discount_type,
        {{ dbt.safe_cast('text_listunitprice', money_type()) }} as list_unit_price,
        {{ dbt.safe_cast('text_contractedunitprice', money_type()) }} as contracted_unit_price,
        '{{ source_format }}' as source_format,
        native_charge_type,
        billing_currency,
        tags_raw,
        tags,
        {{ owner_tag_value('tags', 'project') }} as tag_project_id,
        {{ owner_tag_value('tags', 'team') }} as tag_team_id,
        {{ owner_tag_value('tags', 'user') }} as tag_user_id,
        -- money a sum could not hold is kept as text only (billed_cost_raw), never summed
        case when not is_overflow then billed_cost end as billed_cost,
        case when not is_overflow then effective_cost end as effective_cost,
        case when not is_overflow then list_cost end as list_cost,
        case when not is_overflow then contracted_cost end as contracted_cost,
        consumed_quantity,
        pricing_quantity,
        billed_cost_raw,
        effective_cost_raw,
        -- replaced by a later delivery, or a copy of rows another file already holds: not in the totals
        is_replaced or is_duplicate as is_superseded,
        is_duplicate,
        case
            when delivery_folder <> latest_delivery_folder
                then 'superseded_by_redelivery: ' || latest_delivery_folder
            when native_superseded_reason is not null then native_superseded_reason
            when is_duplicate then 'duplicate_of: ' || first_copy
            {%- for column, label in [('billed_cost_raw', 'BilledCost'), ('effective_cost_raw', 'EffectiveCost')] %}
            when {{ money_has_excess_decimals(column) }}
                then '{{ label }} has more than 18 decimal places: ' || {{ column }}
            {%- endfor %}
            when is_overflow
                then 'money beyond the exact range: this file holds '
                    || cast(cast(file_magnitude as decimal(38, 0)) as string)
                    || ' in absolute value; the current lines of one currency must total under 9e18'
                    || ' (the allocation splits whole units as 64-bit integers)'
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
    from checked

)
{%- endmacro %}

{#- Columns typed apart from the text columns of a row (money, quantities, timestamps). -#}
{% macro money_and_time_columns() -%}
    {{ return([
        'BilledCost', 'EffectiveCost', 'ListCost', 'ContractedCost', 'ConsumedQuantity', 'PricingQuantity',
        'BillingPeriodStart', 'BillingPeriodEnd', 'ChargePeriodStart', 'ChargePeriodEnd', 'Tags'
    ]) }}
{%- endmacro %}

{#- True when a money text holds a non-zero digit past the 18th decimal place, in plain or scientific
    notation (5e-19, 1.0000000000000000001E0): DECIMAL(38, 18) would round it. Trailing zeros are exact. -#}
{% macro money_has_excess_decimals(raw) -%}
    {%- set text = 'trim(' ~ raw ~ ')' -%}
    {%- set integer = "regexp_extract(" ~ text ~ ", '^[+-]?([0-9]*)', 1)" -%}
    {%- set fraction = "regexp_extract(" ~ text ~ ", '^[+-]?[0-9]*[.]([0-9]*)', 1)" -%}
    {%- set exponent = "coalesce(" ~ dbt.safe_cast("regexp_extract(" ~ text ~ ", '[eE]([+-]?[0-9]+)$', 1)", 'int') ~ ", 0)" -%}
    {%- set digits = '(' ~ integer ~ ' || ' ~ fraction ~ ')' -%}
    coalesce(
        {{ regexp_search() }}({{ text }}, '^[+-]?[0-9]*[.]?[0-9]*([eE][+-]?[0-9]+)?$')
        and {{ regexp_search() }}({{ digits }}, '[1-9]')
        and length({{ fraction }}) - {{ exponent }}
            - (length({{ digits }}) - length(regexp_replace({{ digits }}, '0+$', ''))) > 18,
        false
    )
{%- endmacro %}
