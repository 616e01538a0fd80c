{#- Native billing formats: the columns each reader guarantees (null when a file lacks them) and small
    helpers shared by their staging models. Both spellings are listed where a provider has two. -#}

{#- AWS Cost and Usage Report: legacy CUR (`lineItem/UnblendedCost`) and CUR 2.0 / Data Exports
    (`line_item_unblended_cost`). -#}
{% macro aws_cur_columns() -%}
    {%- set pairs = aws_cur_column_pairs() -%}
    {%- set names = [] -%}
    {%- for legacy, cur2 in pairs -%}{%- do names.append(legacy) -%}{%- do names.append(cur2) -%}{%- endfor -%}
    {%- do names.append('resource_tags') -%}
    {{ return(names) }}
{%- endmacro %}

{% macro aws_cur_column_pairs() -%}
    {{ return([
        ('identity/LineItemId', 'identity_line_item_id'),
        ('bill/InvoiceId', 'bill_invoice_id'),
        ('bill/InvoicingEntity', 'bill_invoicing_entity'),
        ('bill/PayerAccountId', 'bill_payer_account_id'),
        ('bill/PayerAccountName', 'bill_payer_account_name'),
        ('bill/BillingPeriodStartDate', 'bill_billing_period_start_date'),
        ('bill/BillingPeriodEndDate', 'bill_billing_period_end_date'),
        ('lineItem/UsageAccountId', 'line_item_usage_account_id'),
        ('lineItem/UsageAccountName', 'line_item_usage_account_name'),
        ('lineItem/LineItemType', 'line_item_line_item_type'),
        ('lineItem/UsageStartDate', 'line_item_usage_start_date'),
        ('lineItem/UsageEndDate', 'line_item_usage_end_date'),
        ('lineItem/ProductCode', 'line_item_product_code'),
        ('lineItem/UsageType', 'line_item_usage_type'),
        ('lineItem/ResourceId', 'line_item_resource_id'),
        ('lineItem/AvailabilityZone', 'line_item_availability_zone'),
        ('lineItem/UsageAmount', 'line_item_usage_amount'),
        ('lineItem/CurrencyCode', 'line_item_currency_code'),
        ('lineItem/UnblendedCost', 'line_item_unblended_cost'),
        ('lineItem/LineItemDescription', 'line_item_line_item_description'),
        ('product/ProductName', 'product_product_name'),
        ('product/productFamily', 'product_product_family'),
        ('product/instanceType', 'product_instance_type'),
        ('product/regionCode', 'product_region_code'),
        ('product/sku', 'product_sku'),
        ('pricing/unit', 'pricing_unit'),
        ('pricing/publicOnDemandCost', 'pricing_public_on_demand_cost'),
        ('reservation/ReservationARN', 'reservation_reservation_a_r_n'),
        ('reservation/EffectiveCost', 'reservation_effective_cost'),
        ('reservation/UnusedAmortizedUpfrontFeeForBillingPeriod',
            'reservation_unused_amortized_upfront_fee_for_billing_period'),
        ('reservation/UnusedRecurringFee', 'reservation_unused_recurring_fee'),
        ('savingsPlan/SavingsPlanARN', 'savings_plan_savings_plan_a_r_n'),
        ('savingsPlan/SavingsPlanEffectiveCost', 'savings_plan_savings_plan_effective_cost'),
        ('savingsPlan/TotalCommitmentToDate', 'savings_plan_total_commitment_to_date'),
        ('savingsPlan/UsedCommitment', 'savings_plan_used_commitment')
    ]) }}
{%- endmacro %}

{#- Azure Cost Management exports (EA and MCA spellings), actual and amortised. -#}
{% macro azure_columns() -%}
    {{ return([
        'BillingAccountId', 'BillingAccountName', 'BillingProfileId', 'BillingProfileName',
        'SubscriptionId', 'SubscriptionGuid', 'SubscriptionName', 'InvoiceId', 'InvoiceSectionName',
        'Date', 'UsageDateTime', 'BillingPeriodStartDate', 'BillingPeriodEndDate',
        'CostInBillingCurrency', 'Cost', 'PreTaxCost', 'BillingCurrencyCode', 'BillingCurrency', 'Currency',
        'ChargeType', 'PricingModel', 'Frequency', 'ResourceId', 'InstanceId', 'ResourceName',
        'ResourceLocation', 'AvailabilityZone', 'MeterCategory', 'MeterSubCategory', 'MeterName', 'MeterId',
        'ProductName', 'Product', 'PartNumber', 'ServiceFamily', 'ConsumedService', 'Quantity',
        'UnitOfMeasure', 'Tags', 'ReservationId', 'benefitId', 'PublisherName', 'PublisherType'
    ]) }}
{%- endmacro %}

{#- Oracle Cloud Infrastructure cost reports (reports/cost-csv). -#}
{% macro oci_columns() -%}
    {{ return([
        'lineItem/referenceNo', 'lineItem/tenantId', 'lineItem/intervalUsageStart', 'lineItem/intervalUsageEnd',
        'product/service', 'product/compartmentId', 'product/compartmentName', 'product/region',
        'product/availabilityDomain', 'product/resourceId', 'usage/billedQuantity', 'cost/subscriptionId',
        'cost/productSku', 'product/Description', 'cost/unitPrice', 'cost/myCost', 'cost/currencyCode',
        'cost/skuUnitDescription', 'lineItem/isCorrection', 'lineItem/backreferenceNo'
    ]) }}
{%- endmacro %}

{#- The landed columns of a relation whose names start with a prefix (tag columns: `resourceTags/`,
    `tags/`), as a list of names; empty while parsing. -#}
{% macro columns_with_prefix(relation, prefix) -%}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- set names = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) if column.name.startswith(prefix) -%}
        {%- do names.append(column.name) -%}
    {%- endfor -%}
    {{ return(names) }}
{%- endmacro %}

{#- A JSON object text from tag columns: key = the column name without `strip` (and without AWS's
    `user:` prefix), value = the column; null when the line has no tag. -#}
{% macro tag_columns_json(columns, strip) -%}
    {%- if columns -%}
    case when coalesce({% for column in columns %}{{ quote_identifier(column) }}{{ ", " if not loop.last }}{% endfor %}) is not null then cast(json_object(
        {%- for column in columns %}
        {{ quote_text(column[strip | length:] | replace("user:", "", 1)) }}, {{ quote_identifier(column) }}{{ "," if not loop.last }}
        {%- endfor %}
    ) as string) end
    {%- else -%}
    cast(null as string)
    {%- endif -%}
{%- endmacro %}

{#- Exact text of a sum of money columns (blank = 0); null when one of them does not parse. -#}
{% macro money_text_sum(columns) -%}
    cast(
        {%- for column in columns %}
        try_cast(coalesce(nullif(trim({{ column }}), ''), '0') as {{ money_type() }}){{ " +" if not loop.last }}
        {%- endfor %}
    as string)
{%- endmacro %}

{#- Google Cloud Billing export rows (the BigQuery export: newline-delimited JSON as `bq extract` writes
    it, Parquet, or CSV with dotted column names such as `project.id`), one JSON object text per row in
    `row_json` with its file and row. Nested fields (credits, labels, project) stay nested. -#}
{% macro read_gcp_billing_exports(relative_dir) -%}
    {%- set files = bill_files_to_read(relative_dir.split('/')[-1]) -%}
    {%- set groups = {'json': [], 'json_gzip': [], 'csv': [], 'csv_gzip': [], 'parquet': []} -%}
    {%- for file in files -%}
        {%- set name = file | lower -%}
        {%- set kind = 'parquet' if name.endswith('.parquet') else ('csv' if '.csv' in name else 'json') -%}
        {%- do groups[kind ~ ('_gzip' if name.endswith('.gz') else '')].append(file) -%}
    {%- endfor -%}
    select
        cast(null as string) as row_json,
        cast(null as string) as filename,
        cast(null as bigint) as source_row_number
    where false
    {%- for kind in ['json', 'json_gzip'] if groups[kind] %}
    union all
    select
        cast(json as string) as row_json,
        filename,
        row_number() over (partition by filename) as source_row_number
    from read_json_objects(
        {{ sql_file_list(groups[kind]) }},
        format = 'newline_delimited',
        filename = true,
        maximum_object_size = 268435456,
        compression = '{{ "gzip" if kind.endswith("gzip") else "none" }}'
    )
    {%- endfor %}
    {%- for kind in ['csv', 'csv_gzip'] if groups[kind] %}
    union all
    select
        cast(to_json(csv_rows) as string) as row_json,
        csv_rows.filename,
        row_number() over (partition by csv_rows.filename) as source_row_number
    from read_csv(
        {{ sql_file_list(groups[kind]) }}, {{ text_csv_options() }},
        compression = '{{ "gzip" if kind.endswith("gzip") else "none" }}'
    ) as csv_rows
    {%- endfor %}
    {%- if groups.parquet %}
    union all
    select
        cast(to_json(parquet_rows) as string) as row_json,
        parquet_rows.filename,
        parquet_rows.file_row_number + 1 as source_row_number
    from read_parquet(
        {{ sql_file_list(groups.parquet) }}, union_by_name = true, filename = true, file_row_number = true
    ) as parquet_rows
    {%- endif %}
{%- endmacro %}

{#- A text field of a GCP export row: the nested path (`$.project.id`) or, for flattened CSV, the dotted
    column (`project.id`). -#}
{% macro gcp_field(path) -%}
    coalesce(
        json_extract_string(row_json, '$.{{ path }}'),
        json_extract_string(row_json, '$."{{ path }}"')
    )
{%- endmacro %}

{#- Money as integer 1e-18 units (HUGEINT), and back to exact text: DECIMAL(38, 18) prints all 18
    decimals, so its digits without the point are the units. -#}
{% macro money_units(amount) -%}
    {{ return(adapter.dispatch('money_units', 'gpucost')(amount)) }}
{%- endmacro %}

{% macro default__money_units(amount) -%}
    cast(replace(cast(cast({{ amount }} as {{ money_type() }}) as string), '.', '') as hugeint)
{%- endmacro %}

{% macro units_money_text(units) -%}
    {{ return(adapter.dispatch('units_money_text', 'gpucost')(units)) }}
{%- endmacro %}

{% macro default__units_money_text(units) -%}
    cast(cast({{ units }} as decimal(38, 0)) * cast('0.000000000000000001' as {{ money_type() }}) as string)
{%- endmacro %}

{#- Spark prints a decimal in scientific notation when small (0E-18), and a decimal product keeps only 6
    fractional digits once its precision passes 38: the units are the amount times 10^18 (an integer, exact
    at scale 6), and the text puts the point 18 digits from the right. -#}
{% macro spark__money_units(amount) -%}
    cast(cast({{ amount }} as {{ money_type() }}) * 1000000000000000000 as decimal(38, 0))
{%- endmacro %}

{% macro spark__units_money_text(units) -%}
    {%- set digits = 'cast(abs(cast(' ~ units ~ ' as decimal(38, 0))) as string)' -%}
    {%- set padded = 'lpad(' ~ digits ~ ', greatest(length(' ~ digits ~ '), 19), \'0\')' -%}
    case when {{ units }} < 0 then '-' else '' end
    || substr({{ padded }}, 1, length({{ padded }}) - 18) || '.' || substr({{ padded }}, -18)
{%- endmacro %}

{#- Integer division of integers (DuckDB //, truncating): on Spark exact on decimal(38, 0) by dividing the
    multiple (a - a % b), as Spark's div returns a bigint and a decimal quotient is rounded to 6 digits. -#}
{% macro int_div(numerator, denominator) -%}
    {{ return(adapter.dispatch('int_div', 'gpucost')(numerator, denominator)) }}
{%- endmacro %}

{% macro default__int_div(numerator, denominator) -%}{{ numerator }} // {{ denominator }}{%- endmacro %}

{% macro spark__int_div(numerator, denominator) -%}
    cast((({{ numerator }}) - ({{ numerator }}) % ({{ denominator }})) / ({{ denominator }}) as decimal(38, 0))
{%- endmacro %}

{#- Every hour from a timestamp to another (both included), as a list. -#}
{% macro hour_series(start, stop) -%}
    {{ return(adapter.dispatch('hour_series', 'gpucost')(start, stop)) }}
{%- endmacro %}

{% macro default__hour_series(start, stop) -%}generate_series({{ start }}, {{ stop }}, interval 1 hour){%- endmacro %}

{% macro spark__hour_series(start, stop) -%}sequence({{ start }}, {{ stop }}, interval 1 hour){%- endmacro %}

{#- Whole months from one month start to another; a month start plus months (a date). -#}
{% macro months_from(start_month, end_month) -%}
    {{ return(adapter.dispatch('months_from', 'gpucost')(start_month, end_month)) }}
{%- endmacro %}

{% macro default__months_from(start_month, end_month) -%}
    date_diff('month', {{ start_month }}, {{ end_month }})
{%- endmacro %}

{% macro spark__months_from(start_month, end_month) -%}
    months_between(cast({{ end_month }} as date), cast({{ start_month }} as date))
{%- endmacro %}

{% macro plus_months(month_start, months) -%}
    {{ return(adapter.dispatch('plus_months', 'gpucost')(month_start, months)) }}
{%- endmacro %}

{% macro default__plus_months(month_start, months) -%}{{ month_start }} + to_months({{ months }}){%- endmacro %}

{% macro spark__plus_months(month_start, months) -%}add_months(cast({{ month_start }} as date), {{ months }}){%- endmacro %}

{#- A UTC timestamp as FOCUS text (2026-10-01T05:00:00Z); a date at midnight with is_date. -#}
{% macro utc_text(timestamp, is_date=false) -%}
    {{ return(adapter.dispatch('utc_text', 'gpucost')(timestamp, is_date)) }}
{%- endmacro %}

{% macro default__utc_text(timestamp, is_date=false) -%}
    strftime({{ timestamp }}, '{{ "%Y-%m-%dT00:00:00Z" if is_date else "%Y-%m-%dT%H:%M:%SZ" }}')
{%- endmacro %}

{% macro spark__utc_text(timestamp, is_date=false) -%}
    date_format({{ timestamp }}, "{{ "yyyy-MM-dd'T'00:00:00'Z'" if is_date else "yyyy-MM-dd'T'HH:mm:ss'Z'" }}")
{%- endmacro %}
