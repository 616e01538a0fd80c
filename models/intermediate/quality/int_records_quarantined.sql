-- Everything that could not be used, and why: bill lines one by one (with their money when it parses),
-- telemetry samples grouped by file, metric and reason (a telemetry file that yields no sample is one row with
-- its reason; the serving counters of metrics/serving as the DCGM ones), Slurm records one by one. Nothing is
-- dropped without a row here.
-- struct fields (`sample.sampled_epoch`) read to sqlfluff as table qualifiers:
-- noqa: disable=RF03
{%- set symlinks = ref('stg_landing__links') if target.type != 'spark'
    else '(select cast(null as string) as source_file, false as is_target_outside)' %}
with

charges as (

    select * from {{ ref('int_bill_line_items') }}
    where quarantine_reason is not null

),

dcgm_samples as (

    select * from {{ ref('base_dcgm__samples') }}
    where quarantine_reason is not null

),

bill_files as (

    select * from {{ ref('stg_landing__bill_files') }}
    where file_status <> 'read'

),

onprem_items as (

    select * from {{ ref('stg_onprem__cost_items') }}
    where quarantine_reason is not null

),

outside_links as (

    -- symlinks out of the landing zone that no reader opened (landing_files never lists them); refused
    -- bill files have their own row from stg_landing__bill_files. The spark target lists no symlinks
    -- (stg_landing__links is a Python model).
    select links.source_file
    from {{ symlinks }} as links
    left join {{ ref('stg_landing__bill_files') }} as bill_files
        on links.source_file = bill_files.source_file
    where links.is_target_outside and bill_files.source_file is null

),

slurm_records as (

    select * from {{ ref('stg_slurm__job_records') }}
    where quarantine_reason is not null

),

kube_series as (
    select * from {{ ref('base_kube__series') }}
    where {{ list_size('quarantined_samples') }} > 0

),

-- The lint's templater renders the serving CTEs (not on spark, where the serving models are disabled) into
-- one layout with the rest:
-- noqa: disable=LT02
{%- if target.type != 'spark' %}

serving_series as (

    select * from {{ ref('base_serving__series') }}
    where {{ list_size('quarantined_samples') }} > 0

),

serving_quarantined as (

    select
        source_file,
        metric_name,
        {{ unnest_as('quarantined_samples', 'sample') }}
    from serving_series

),

serving_samples as (

    select
        source_file,
        metric_name,
        sample.sample_value_raw as sample_value,
        sample.quarantine_reason
    from serving_quarantined

),

serving as (

    select
        'metrics/serving' as source_kind,
        source_file,
        cast(null as bigint) as source_row_number,
        coalesce(metric_name, '(file)') as metric_name,
        quarantine_reason,
        count(*) as record_count,
        min(coalesce(sample_value, '<null>')) as example_value,
        cast(null as {{ money_type() }}) as billed_cost,
        cast(null as {{ money_type() }}) as effective_cost,
        cast(null as string) as billing_currency,
        cast(null as date) as billing_period_start
    from serving_samples
    group by 2, 4, 5

),
{%- endif %}
-- noqa: enable=LT02

kube_quarantined as (

    select
        source_file,
        metric_name,
        {{ unnest_as('quarantined_samples', 'sample') }}
    from kube_series

),

kube_samples as (

    select
        source_file,
        metric_name,
        sample.sample_value_raw as sample_value,
        sample.quarantine_reason
    from kube_quarantined

),

bill_lines as (

    select
        'billing/' || source_format as source_kind,
        source_file,
        source_row_number,
        cast(null as string) as metric_name,
        quarantine_reason,
        cast(1 as bigint) as record_count,
        coalesce(billed_cost_raw, '<null>') as example_value,
        billed_cost,
        effective_cost,
        billing_currency,
        billing_period_start
    from charges

),

bill_file_rows as (

    -- a landed bill file not read (empty, rejected, another FOCUS dataset, a manifest's leftover): one row
    select
        'billing/' || bill_format as source_kind,
        source_file,
        cast(null as bigint) as source_row_number,
        cast(null as string) as metric_name,
        file_reason as quarantine_reason,
        cast(1 as bigint) as record_count,
        file_status as example_value,
        cast(null as {{ money_type() }}) as billed_cost,
        cast(null as {{ money_type() }}) as effective_cost,
        cast(null as string) as billing_currency,
        cast(null as date) as billing_period_start
    from bill_files

),

dcgm as (

    select
        'metrics/dcgm' as source_kind,
        source_file,
        cast(null as bigint) as source_row_number,
        -- a file that yields no series: '(file)'
        coalesce(metric_name, '(file)') as metric_name,
        quarantine_reason,
        count(*) as record_count,
        min(coalesce(sample_value_raw, '<null>')) as example_value,
        cast(null as {{ money_type() }}) as billed_cost,
        cast(null as {{ money_type() }}) as effective_cost,
        cast(null as string) as billing_currency,
        cast(null as date) as billing_period_start
    from dcgm_samples
    group by 2, 4, 5

),

kube as (

    select
        'metrics/kube' as source_kind,
        source_file,
        cast(null as bigint) as source_row_number,
        coalesce(metric_name, '(file)') as metric_name,
        quarantine_reason,
        count(*) as record_count,
        min(coalesce(sample_value, '<null>')) as example_value,
        cast(null as {{ money_type() }}) as billed_cost,
        cast(null as {{ money_type() }}) as effective_cost,
        cast(null as string) as billing_currency,
        cast(null as date) as billing_period_start
    from kube_samples
    group by 2, 4, 5

),

onprem as (

    select
        'billing/onprem' as source_kind,
        source_file,
        cast(null as bigint) as source_row_number,
        'item ' || item_id as metric_name,
        quarantine_reason,
        cast(1 as bigint) as record_count,
        coalesce(item_type, '<null>') as example_value,
        amount as billed_cost,
        amount as effective_cost,
        billing_currency,
        cast(null as date) as billing_period_start
    from onprem_items

),

slurm as (

    -- sacct records that cannot be read (one row each), and sacct files that cannot be read at all
    select
        'scheduler/slurm' as source_kind,
        source_file,
        source_row_number,
        case when source_row_number is null then '(file)' end as metric_name,
        quarantine_reason,
        cast(1 as bigint) as record_count,
        coalesce(substr(raw_line, 1, 200), '<file>') as example_value,
        cast(null as {{ money_type() }}) as billed_cost,
        cast(null as {{ money_type() }}) as effective_cost,
        cast(null as string) as billing_currency,
        cast(null as date) as billing_period_start
    from slurm_records

),

refused_links as (

    select
        coalesce(
            nullif(
                regexp_extract(
                    replace(source_file, '\\', '/'), '/((billing|metrics|scheduler|inventory)/[^/]+)/', 1
                ),
                ''
            ),
            'landing'
        ) as source_kind,
        source_file,
        cast(null as bigint) as source_row_number,
        '(file)' as metric_name,
        'a symbolic link whose target is outside the landing zone: refused, not read' as quarantine_reason,
        cast(1 as bigint) as record_count,
        '<file>' as example_value,
        cast(null as {{ money_type() }}) as billed_cost,
        cast(null as {{ money_type() }}) as effective_cost,
        cast(null as string) as billing_currency,
        cast(null as date) as billing_period_start
    from outside_links

),

unioned as (

    select * from bill_lines
    union all
    select * from bill_file_rows
    union all
    select * from onprem
    union all
    select * from dcgm
    union all
    select * from kube
    -- noqa: disable=LT02
    {%- if target.type != 'spark' %}
    union all
    select * from serving
    {%- endif %}
    -- noqa: enable=LT02
    union all
    select * from slurm
    union all
    select * from refused_links

),

final as (

    select
        md5(
            source_kind || '|' || source_file || '|' || coalesce(cast(source_row_number as string), '')
            || '|' || coalesce(metric_name, '') || '|' || quarantine_reason
        ) as quarantine_id,
        source_kind,
        source_file,
        source_row_number,
        metric_name,
        quarantine_reason,
        record_count,
        example_value,
        billed_cost,
        effective_cost,
        billing_currency,
        billing_period_start
    from unioned

)

select * from final
