-- One row per budget (seed `budgets`): month-to-date cost of the owner (a team, or one of its projects),
-- the run-rate forecast for the whole month plus known reservations, and the status against the budget's
-- warning and critical thresholds. Money is cents (cents_type(), as in fct_chargeback_monthly, whose rows
-- give the month-to-date cost, so it is the statement's amount to the cent). Threshold checks compare
-- money exactly (cost >= amount x threshold, in DECIMAL). The two divisions (run rate, ratios) are done on
-- whole numbers with integer division and rounded half away from zero: no DOUBLE ever touches them.
-- Rounded integer division, n / d half away from zero for d > 0: sign(n) * ((2|n| + d) div 2d).
{%- set whole = 'hugeint' if target.type == 'duckdb' else 'decimal(38, 0)' %}
{%- set div = '//' if target.type == 'duckdb' else 'div' %}

with

budgets as (

    select * from {{ ref('budgets') }}

),

chargeback as (

    select * from {{ ref('fct_chargeback_monthly') }}

),

allocations as (

    select * from {{ ref('fct_cost_allocation') }}

),

budgets_keyed as (

    select
        md5(
            lower(trim(team_id)) || '|' || coalesce(lower(trim(project_id)), '') || '|'
            || cast(cast(month as date) as string) || '|' || upper(trim(currency))
        ) as budget_id,
        lower(trim(team_id)) as team_id,
        nullif(lower(trim(project_id)), '') as project_id,
        upper(trim(currency)) as billing_currency,
        cast(amount as {{ cents_type() }}) as budget_amount,
        cast(coalesce(reserved_amount, 0) as {{ cents_type() }}) as reserved_amount,
        cast(warn_threshold as decimal(18, 6)) as warn_threshold,
        cast(critical_threshold as decimal(18, 6)) as critical_threshold,
        cast(month as date) as billing_period_start,
        cast({{ dbt.last_day('cast(month as date)', 'month') }} as date) as billing_period_end
    from budgets

),

-- The last day with cost in each billing month: the latest charge-period start inside the month.
month_progress as (

    select
        billing_period_start,
        max(cast(charge_period_start_at as date)) as as_of_date
    from allocations
    where
        charge_period_start_at is not null
        and cast(charge_period_start_at as date) >= billing_period_start
        and cast(charge_period_start_at as date) <= {{ dbt.last_day('billing_period_start', 'month') }}
    group by 1

),

owner_cost as (

    select
        budgets_keyed.budget_id,
        cast(coalesce(sum(chargeback.billed_cost), 0) as {{ cents_type() }}) as month_to_date_cost
    from budgets_keyed
    left join chargeback
        on budgets_keyed.billing_period_start = chargeback.billing_period_start
        and budgets_keyed.billing_currency = chargeback.billing_currency
        and budgets_keyed.team_id = chargeback.team_id
        and (budgets_keyed.project_id is null or budgets_keyed.project_id = chargeback.project_id)
    group by 1

),

measured as (

    select
        budgets_keyed.*,
        owner_cost.month_to_date_cost,
        month_progress.as_of_date,
        cast(coalesce(day(month_progress.as_of_date), 0) as integer) as days_elapsed,
        cast(day(budgets_keyed.billing_period_end) as integer) as days_in_month,
        -- whole cents, for the integer divisions below
        cast(owner_cost.month_to_date_cost * 100 as {{ whole }}) as month_to_date_cents,
        cast(budgets_keyed.budget_amount * 100 as {{ whole }}) as budget_cents
    from budgets_keyed
    inner join owner_cost on budgets_keyed.budget_id = owner_cost.budget_id
    left join month_progress on budgets_keyed.billing_period_start = month_progress.billing_period_start

),

-- Run rate: month-to-date cents / days elapsed x days in month, to the cent. With no day elapsed there
-- is no run rate: the month-to-date cost as is.
run_rate as (

    select
        *,
        month_to_date_cents * days_in_month as run_rate_numerator,
        nullif(budget_cents, 0) as ratio_divisor
    from measured

),

forecast as (

    select
        *,
        cast(
            cast(
                case
                    when days_elapsed = 0 then month_to_date_cents
                    else sign(run_rate_numerator)
                        * ((2 * abs(run_rate_numerator) + days_elapsed) {{ div }} (2 * days_elapsed))
                end as decimal(38, 0)
            ) * cast(0.01 as decimal(3, 2)) + reserved_amount as {{ cents_type() }}
        ) as forecast_cost
    from run_rate

),

ratios as (

    select
        *,
        -- millionths of the budget, by rounded integer division (null for a zero budget)
        sign(month_to_date_cents)
        * ((2 * abs(month_to_date_cents) * 1000000 + ratio_divisor) {{ div }} (2 * ratio_divisor))
            as burn_millionths,
        sign(forecast_cost)
        * ((2 * abs(cast(forecast_cost * 100 as {{ whole }})) * 1000000 + ratio_divisor) {{ div }} (2 * ratio_divisor))
            as forecast_millionths
    from forecast

),

assessed as (

    select
        *,
        cast(cast(burn_millionths as decimal(38, 0)) * cast(0.000001 as decimal(7, 6)) as decimal(38, 6))
            as burn_ratio,
        cast(cast(forecast_millionths as decimal(38, 0)) * cast(0.000001 as decimal(7, 6)) as decimal(38, 6))
            as forecast_ratio,
        -- the most severe first: a crossed critical, a forecast critical, a crossed warning, a forecast one
        case
            when month_to_date_cost >= budget_amount * critical_threshold then 'critical'
            when forecast_cost >= budget_amount * critical_threshold then 'forecast_critical'
            when month_to_date_cost >= budget_amount * warn_threshold then 'warning'
            when forecast_cost >= budget_amount * warn_threshold then 'forecast_warning'
            else 'ok'
        end as status
    from ratios

),

final as (

    select
        budget_id,
        team_id,
        project_id,
        billing_currency,
        status,
        budget_amount,
        reserved_amount,
        warn_threshold,
        critical_threshold,
        month_to_date_cost,
        forecast_cost,
        burn_ratio,
        forecast_ratio,
        days_elapsed,
        days_in_month,
        billing_period_start,
        as_of_date
    from assessed

)

select * from final
