-- A table, though the staging models it unions are views: eleven models and four data tests read it,
-- and a view would type every bill line again for each of them (DuckDB planned the union of the six
-- formats' views in 0.4-1.5 s per read on a one-day month; docs/testing.md, what made it cheaper).

-- Every bill line of every format in one shape: FOCUS exports, the native AWS CUR, Azure, OCI and
-- GCP reports and the on-prem cost lines, each typed by the same rules (typed_bill_charges), with its
-- source_format. Every later model reads this, never a single format. The native formats are not built
-- on the spark target (dbt_project.yml, docs/spark.md): there it is FOCUS and on-prem lines.
{%- set native_formats = ['aws_cur', 'azure', 'oci', 'gcp'] if target.type != 'spark' else [] %}
{%- do spark_check_native_bills() %}
with

focus as (

    select * from {{ ref('stg_focus__charges') }}

),

{% if 'aws_cur' in native_formats %}
    aws_cur as (

        select * from {{ ref('stg_aws_cur__line_items') }}

    ),
{% endif %}

{% if 'azure' in native_formats %}
    azure as (

        select * from {{ ref('stg_azure__cost_details') }}

    ),
{% endif %}

{% if 'oci' in native_formats %}
    oci as (

        select * from {{ ref('stg_oci__cost_reports') }}

    ),
{% endif %}

{% if 'gcp' in native_formats %}
    gcp as (

        select * from {{ ref('stg_gcp__billing_export') }}

    ),
{% endif %}

onprem as (

    select * from {{ ref('int_onprem_cost_lines') }}

),

unioned as (

    select * from focus
    {%- if 'aws_cur' in native_formats %}
        union all
        select * from aws_cur
    {%- endif %}
    {%- if 'azure' in native_formats %}
        union all
        select * from azure
    {%- endif %}
    {%- if 'oci' in native_formats %}
        union all
        select * from oci
    {%- endif %}
    {%- if 'gcp' in native_formats %}
        union all
        select * from gcp
    {%- endif %}
    union all
    select * from onprem

)

select * from unioned
