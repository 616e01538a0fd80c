{#- The landing zone: raw files exactly as the tools emit them, read in place by DuckDB.
    Every reader returns the same columns whether or not any file matches, so a fresh
    warehouse with an empty folder builds (to empty tables) instead of failing. -#}

{% macro landing_path(relative) -%}
    {{- var('gpucost_landing_dir') ~ '/' ~ relative -}}
{%- endmacro %}

{#- The files matching a glob under the landing zone (empty list while parsing). -#}
{% macro landing_files(relative_glob) -%}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- set pattern = landing_path(relative_glob) -%}
    {%- set result = run_query("select file from glob('" ~ pattern | replace("'", "''") ~ "') order by file") -%}
    {{ return(result.columns[0].values() | list) }}
{%- endmacro %}

{#- Files with distinct bytes: a file landed twice (same content under another name, a re-sent export)
    is read once, the first by name. stg_landing__files lists what was skipped and why. -#}
{% macro distinct_content_files(files) -%}
    {%- if not files -%}{{ return([]) }}{%- endif -%}
    {%- set result = run_query(
        "select filename, md5(content) as content_md5 from read_blob(" ~ sql_string_list(files) ~ ") order by filename"
    ) -%}
    {%- set seen = [] -%}
    {%- set kept = [] -%}
    {%- for row in result.rows -%}
        {%- if row[1] not in seen -%}
            {%- do seen.append(row[1]) -%}
            {%- do kept.append(row[0]) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(kept) }}
{%- endmacro %}

{% macro sql_string_list(values) -%}
    [{%- for value in values -%}'{{ value | replace("'", "''") }}'{{ ", " if not loop.last }}{%- endfor -%}]
{%- endmacro %}

{#- FOCUS exports (CSV and Parquet, 1.0 to 1.2) as text columns with every spec column present.
    Missing spec columns are null; extra columns are kept; nothing is typed yet (staging does it). -#}
{% macro read_focus_exports(relative_dir) -%}
    {%- set csv_files = distinct_content_files(
        landing_files(relative_dir ~ '/**/*.csv') + landing_files(relative_dir ~ '/**/*.csv.gz')
    ) -%}
    {%- set parquet_files = distinct_content_files(landing_files(relative_dir ~ '/**/*.parquet')) -%}
    select
        {% for column in focus_columns() -%}
        cast(null as varchar) as "{{ column }}",
        {% endfor -%}
        cast(null as varchar) as filename,
        cast(null as bigint) as source_row_number
    where false
    {%- if csv_files %}
    union all by name
    select
        * exclude (filename),
        filename,
        row_number() over (partition by filename) as source_row_number
    from read_csv(
        {{ sql_string_list(csv_files) }},
        header = true,
        all_varchar = true,
        union_by_name = true,
        filename = true,
        nullstr = ['', 'NULL']
    )
    {%- endif %}
    {%- if parquet_files %}
    union all by name
    select
        columns(* exclude (filename, file_row_number))::varchar,
        filename,
        file_row_number + 1 as source_row_number
    from read_parquet(
        {{ sql_string_list(parquet_files) }},
        union_by_name = true,
        filename = true,
        file_row_number = true
    )
    {%- endif %}
{%- endmacro %}

{#- Columns of FOCUS 1.0 - 1.2 that the warehouse reads (others pass through untouched). -#}
{% macro focus_columns() -%}
    {{ return([
        'AvailabilityZone', 'BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency',
        'BillingPeriodEnd', 'BillingPeriodStart', 'ChargeCategory', 'ChargeClass', 'ChargeDescription',
        'ChargeFrequency', 'ChargePeriodEnd', 'ChargePeriodStart', 'CommitmentDiscountCategory',
        'CommitmentDiscountId', 'CommitmentDiscountName', 'CommitmentDiscountStatus', 'CommitmentDiscountType',
        'ConsumedQuantity', 'ConsumedUnit', 'ContractedCost', 'ContractedUnitPrice', 'EffectiveCost',
        'InvoiceId', 'InvoiceIssuerName', 'ListCost', 'ListUnitPrice', 'PricingCategory', 'PricingQuantity',
        'PricingUnit', 'ProviderName', 'PublisherName', 'RegionId', 'RegionName', 'ResourceId', 'ResourceName',
        'ResourceType', 'ServiceCategory', 'ServiceName', 'SkuId', 'SkuPriceId', 'SubAccountId',
        'SubAccountName', 'Tags'
    ]) }}
{%- endmacro %}

{#- Prometheus /api/v1/query_range responses (resultType matrix), one sample per row:
    the file, the series' labels as a map, the sample's unix time and its value as text. -#}
{% macro read_prometheus_matrix(relative_dir) -%}
    {%- set files = landing_files(relative_dir ~ '/**/*.json') + landing_files(relative_dir ~ '/**/*.json.gz') -%}
    {%- if files %}
    with responses as (

        select
            filename,
            data.resultType as result_type,
            unnest(data.result) as series
        from read_json(
            {{ sql_string_list(files) }},
            format = 'auto',
            filename = true,
            columns = {
                status: 'varchar',
                data: 'struct(resultType varchar, result struct(metric map(varchar, varchar), "values" varchar[][])[])'
            }
        )
        where status = 'success'

    ),

    samples as (

        select
            filename,
            result_type,
            series.metric as labels,
            unnest(series."values") as sample
        from responses

    )

    select
        filename,
        labels,
        cast(sample[1] as double) as sampled_epoch,
        sample[2] as sample_value
    from samples
    where result_type = 'matrix'
    {%- else %}
    select
        cast(null as varchar) as filename,
        cast(null as map(varchar, varchar)) as labels,
        cast(null as double) as sampled_epoch,
        cast(null as varchar) as sample_value
    where false
    {%- endif %}
{%- endmacro %}

{#- An optional reference CSV: its rows, or none, with the given text columns. -#}
{% macro read_optional_csv(relative_glob, columns) -%}
    {%- set files = landing_files(relative_glob) -%}
    select
        {% for column in columns -%}
        cast(null as varchar) as {{ column }},
        {% endfor -%}
        cast(null as varchar) as filename
    where false
    {%- if files %}
    union all by name
    select * from read_csv(
        {{ sql_string_list(files) }},
        header = true,
        all_varchar = true,
        union_by_name = true,
        filename = true,
        nullstr = ['', 'NULL']
    )
    {%- endif %}
{%- endmacro %}
