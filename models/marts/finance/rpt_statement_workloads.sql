-- The workloads behind each team's statement: one row per billing month, currency, team, project,
-- workload and attribution (method, rule), with its GPU-hours, its exact cost on the statement (every
-- fct_cost_allocation row that names the workload: its GPU time, the CPU and memory parts of its nodes,
-- its volumes; idle time is spread per owner, not per workload, so it is not here) and, for a placement
-- a team may dispute, the evidence: the learned model's strongest signals, or the rule / override that
-- matched and the workload value it matched on. `gpucost statements` prints it as the appendix.
with

allocations as (

    select * from {{ ref('fct_cost_allocation') }}

),

gpu_usage as (

    select * from {{ ref('fct_gpu_usage') }}

),

predictions as (

    select * from {{ ref('int_workload_attribution_predictions') }}

),

declared as (

    select * from {{ ref('int_workload_owners_declared') }}

),

rules as (

    select * from {{ ref('attribution_rules') }}

),

overrides as (

    select * from {{ ref('attribution_overrides') }}

),

workload_costs as (

    select
        billing_period_start,
        billing_currency,
        team_id,
        project_id,
        workload_id,
        attribution_method,
        attribution_rule_id,
        max(user_id) as user_id,
        max(attribution_confidence) as attribution_confidence,
        sum(billed_cost) as billed_cost,
        sum(effective_cost) as effective_cost
    from allocations
    where workload_id is not null
    group by 1, 2, 3, 4, 5, 6, 7

),

workload_hours as (

    select
        billing_period_start,
        billing_currency,
        team_id,
        project_id,
        workload_id,
        attribution_method,
        sum(gpu_hours) as gpu_hours
    from gpu_usage
    where usage_kind = 'usage'
    group by 1, 2, 3, 4, 5, 6

),

-- the workload's own fields, named as the rules' match_field reads them (macro attribution_field)
workload_fields as (

    select
        workload_id,
        cluster_id,
        namespace,
        pod,
        user_id as label_user_id,
        label_team_id,
        label_project_id,
        label_app,
        image_repository
    from declared

),

matchers as (

    select
        'rule' as attribution_method,
        rule_id as matcher_id,
        match_field,
        match_pattern,
        description as matcher_reason
    from rules
    union all
    select
        'override' as attribution_method,
        override_id as matcher_id,
        match_field,
        match_pattern,
        reason as matcher_reason
    from overrides

),

matched as (

    select
        workload_costs.workload_id,
        workload_costs.attribution_method,
        workload_costs.attribution_rule_id,
        -- field=value, the form of the model's signals (so a user=<id> is pseudonymised like theirs)
        matchers.attribution_method || ' ' || matchers.matcher_id || ': ' || matchers.match_field || '='
        || {{ attribution_field('workload_fields', 'matchers.match_field') }}
        || ' matches ' || matchers.match_pattern
        || coalesce(' (' || nullif(trim(matchers.matcher_reason), '') || ')', '') as matcher_signals
    from workload_costs
    inner join matchers
        on workload_costs.attribution_method = matchers.attribution_method
        and workload_costs.attribution_rule_id = matchers.matcher_id
    left join workload_fields on workload_costs.workload_id = workload_fields.workload_id
    group by 1, 2, 3, 4

),

joined as (

    select
        workload_costs.*,
        coalesce(workload_hours.gpu_hours, 0) as gpu_hours,
        case
            when workload_costs.attribution_method in ({{ learned_project_methods() }}, {{ learned_team_methods() }})
                then predictions.attribution_signals
            when workload_costs.attribution_method in ('rule', 'override') then matched.matcher_signals
        end as attribution_signals
    from workload_costs
    left join workload_hours
        on workload_costs.billing_period_start = workload_hours.billing_period_start
        and workload_costs.billing_currency = workload_hours.billing_currency
        and workload_costs.team_id = workload_hours.team_id
        and workload_costs.project_id = workload_hours.project_id
        and workload_costs.workload_id = workload_hours.workload_id
        and workload_costs.attribution_method = workload_hours.attribution_method
    left join predictions on workload_costs.workload_id = predictions.workload_id
    left join matched
        on workload_costs.workload_id = matched.workload_id
        and workload_costs.attribution_method = matched.attribution_method
        and workload_costs.attribution_rule_id = matched.attribution_rule_id

),

final as (

    select
        md5(
            cast(billing_period_start as string) || '|' || billing_currency || '|' || team_id || '|'
            || project_id || '|' || workload_id || '|' || attribution_method || '|'
            || coalesce(attribution_rule_id, '')
        ) as statement_workload_id,
        workload_id,
        team_id,
        project_id,
        user_id,
        attribution_method,
        attribution_rule_id,
        attribution_signals,
        billing_currency,
        cast(gpu_hours as decimal(18, 6)) as gpu_hours,
        cast(attribution_confidence as decimal(9, 6)) as attribution_confidence,
        cast(billed_cost as decimal(38, 18)) as billed_cost,
        cast(effective_cost as decimal(38, 18)) as effective_cost,
        billing_period_start
    from joined

)

select * from final
