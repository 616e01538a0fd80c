-- One row per budget threshold (warning, critical) that month-to-date cost has crossed (an `actual`
-- alert) or that the run-rate forecast will cross (a `forecast` alert, only while the actual cost has not
-- crossed that threshold yet). A budget with nothing crossed has no row. Crossing is exact: cost >= amount
-- x threshold, compared in DECIMAL.
with

budget_status as (

    select * from {{ ref('rpt_budget_status') }}

),

levels as (

    select
        budget_status.*,
        'warning' as alert_level,
        budget_status.warn_threshold as threshold_ratio
    from budget_status
    union all
    select
        budget_status.*,
        'critical' as alert_level,
        budget_status.critical_threshold as threshold_ratio
    from budget_status

),

crossed as (

    select
        *,
        budget_amount * threshold_ratio as threshold_amount_exact,
        case
            when month_to_date_cost >= budget_amount * threshold_ratio then 'actual'
            when forecast_cost >= budget_amount * threshold_ratio then 'forecast'
        end as alert_kind
    from levels

),

alerts as (

    select
        *,
        case when alert_kind = 'actual' then month_to_date_cost else forecast_cost end as observed_cost,
        case when alert_kind = 'actual' then burn_ratio else forecast_ratio end as observed_ratio,
        case when alert_kind = 'actual' then alert_level else 'forecast_' || alert_level end as alert_type,
        team_id || case when project_id is null then '' else '/' || project_id end as owner_label
    from crossed
    where alert_kind is not null

),

final as (

    select
        md5(budget_id || '|' || alert_level) as alert_id,
        budget_id,
        team_id,
        project_id,
        billing_currency,
        alert_type,
        alert_level,
        alert_kind,
        upper(alert_type) || ': ' || owner_label || ' '
        || case
            when alert_kind = 'actual'
                then 'has spent ' || cast(month_to_date_cost as string) || ' ' || billing_currency
            else
                'is forecast to spend ' || cast(forecast_cost as string) || ' ' || billing_currency
                || ' (run rate over ' || cast(days_elapsed as string) || ' of ' || cast(days_in_month as string)
                || ' days + reserved ' || cast(reserved_amount as string) || ')'
        end
        || ' of its ' || cast(budget_amount as string) || ' ' || billing_currency || ' budget for '
        || substr(cast(billing_period_start as string), 1, 7) || ': '
        || coalesce(cast(cast(observed_ratio * 100 as decimal(38, 1)) as string), '-') || '%, '
        || alert_level || ' threshold ' || cast(cast(threshold_ratio * 100 as decimal(18, 1)) as string) || '%'
        || coalesce(' (as of ' || cast(as_of_date as string) || ')', '') as message,
        budget_amount,
        cast(threshold_amount_exact as {{ cents_type() }}) as threshold_amount,
        observed_cost,
        month_to_date_cost,
        forecast_cost,
        threshold_ratio,
        observed_ratio,
        billing_period_start,
        as_of_date
    from alerts

)

select * from final
