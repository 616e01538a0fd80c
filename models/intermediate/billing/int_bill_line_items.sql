-- A view, like the staging models it unions: read where it is used, nothing copied.
{{ config(materialized='view') }}

-- Every bill line of every format in one shape: FOCUS exports, the native AWS CUR, Azure, OCI and
-- GCP reports and the on-prem cost lines, each typed by the same rules (typed_bill_charges), with its
-- source_format. Every later model reads this, never a single format.
with

focus as (

    select * from {{ ref('stg_focus__charges') }}

),

aws_cur as (

    select * from {{ ref('stg_aws_cur__line_items') }}

),

azure as (

    select * from {{ ref('stg_azure__cost_details') }}

),

oci as (

    select * from {{ ref('stg_oci__cost_reports') }}

),

gcp as (

    select * from {{ ref('stg_gcp__billing_export') }}

),

onprem as (

    select * from {{ ref('int_onprem_cost_lines') }}

),

unioned as (

    select * from focus
    union all
    select * from aws_cur
    union all
    select * from azure
    union all
    select * from oci
    union all
    select * from gcp
    union all
    select * from onprem

)

select * from unioned
