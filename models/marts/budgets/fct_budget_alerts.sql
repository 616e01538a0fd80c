-- One alert per budget that is not ok, at its most severe level (rpt_budget_status.status): a budget
-- whose month-to-date cost crossed the critical threshold raises one critical alert, not a critical and a
-- warning. The level is the threshold (warning, critical); the kind says whether month-to-date cost
-- crossed it (`actual`) or the run-rate forecast will (`forecast`). A budget that is ok has no row.
-- Crossing is exact: cost >= amount x threshold, compared in DECIMAL (in rpt_budget_status).
with

budget_status as (

    select * from {{ ref('rpt_budget_status') }}

),

alerts as (

    select
        *,
        status as alert_type,
        case when status in ('critical', 'forecast_critical') then 'critical' else 'warning' end
            as alert_level,
        case when status in ('critical', 'warning') then 'actual' else 'forecast' end as alert_kind
    from budget_status
    where status != 'ok'

),

measured as (

    select
        *,
        case when alert_level = 'critical' then critical_threshold else warn_threshold end
            as threshold_ratio,
        case when alert_kind = 'actual' then month_to_date_cost else forecast_cost end as observed_cost,
        case when alert_kind = 'actual' then burn_ratio else forecast_ratio end as observed_ratio,
        team_id || case when project_id is null then '' else '/' || project_id end as owner_label
    from alerts

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
        cast(budget_amount * threshold_ratio as {{ cents_type() }}) as threshold_amount,
        observed_cost,
        month_to_date_cost,
        forecast_cost,
        threshold_ratio,
        observed_ratio,
        billing_period_start,
        as_of_date
    from measured

)

select * from final
