-- The unit cost of inference: per serving deployment, model, team and day (UTC), the cost of the GPU nodes
-- allocated to its serving pods (fct_cost_allocation's rows of those pods: their GPU, CPU and memory parts
-- of the node lines, usage and the idle spread to them, exact DECIMAL), the tokens in and out and the
-- requests their engines counted, and the cost per 1M tokens and per 1k requests, computed from the
-- exact cost in integer 1e-18 units (truncated there) and null when nothing was counted.
-- A pod-day whose cost went to more than one team (a shared workload, a part left unallocated) gives
-- each team its cost; its tokens and requests go with the team that paid the most of it (ties: team id),
-- so that no token is counted twice: the other teams' rows show the cost with no tokens.
{%- set ratios = [
    ('cost_per_million_tokens', 'total_tokens', 1000000),
    ('cost_per_thousand_requests', 'request_count', 1000),
] %}
with

serving_pods as (

    select * from {{ ref('int_inference_pods') }}

),

usage_daily as (

    select * from {{ ref('int_inference_usage_daily') }}

),

allocations as (

    select * from {{ ref('fct_cost_allocation') }}
    where cost_component in ('compute_gpu', 'compute_cpu', 'compute_memory')

),

pods as (

    -- one row per serving pod (its incarnations share deployment, engine and model)
    select
        pod_key,
        min(cluster_id) as cluster_id,
        min(namespace) as namespace,
        min(deployment_name) as deployment_name,
        min(engine) as engine,
        min(model_name) as model_name,
        min(owner_team_id) as owner_team_id
    from serving_pods
    group by 1

),

pod_costs as (

    select
        serving_pods.pod_key,
        cast(allocations.charge_period_start_at as date) as usage_date,
        allocations.team_id,
        allocations.billing_currency,
        sum(allocations.effective_cost) as effective_cost,
        sum(allocations.billed_cost) as billed_cost,
        sum(case when allocations.cost_component = 'compute_gpu' then allocations.effective_cost else 0 end)
            as gpu_effective_cost
    from allocations
    inner join serving_pods on allocations.workload_id = serving_pods.workload_id
    group by 1, 2, 3, 4

),

ranked_costs as (

    select
        *,
        row_number() over (
            partition by pod_key, usage_date order by effective_cost desc, team_id asc, billing_currency asc
        ) as payer_rank
    from pod_costs

),

pod_days as (

    select
        coalesce(ranked_costs.pod_key, usage_daily.pod_key) as pod_key,
        coalesce(ranked_costs.usage_date, usage_daily.usage_date) as usage_date,
        ranked_costs.team_id,
        ranked_costs.billing_currency,
        coalesce(ranked_costs.effective_cost, 0) as effective_cost,
        coalesce(ranked_costs.billed_cost, 0) as billed_cost,
        coalesce(ranked_costs.gpu_effective_cost, 0) as gpu_effective_cost,
        coalesce(usage_daily.prompt_tokens, 0) as prompt_tokens,
        coalesce(usage_daily.generation_tokens, 0) as generation_tokens,
        coalesce(usage_daily.request_count, 0) as request_count,
        coalesce(usage_daily.failed_request_count, 0) as failed_request_count,
        coalesce(usage_daily.counter_reset_count, 0) as counter_reset_count,
        case when usage_daily.pod_key is not null then 1 else 0 end as is_counted
    from ranked_costs
    full outer join usage_daily
        on ranked_costs.pod_key = usage_daily.pod_key
        and ranked_costs.usage_date = usage_daily.usage_date
        and ranked_costs.payer_rank = 1

),

grouped as (

    select
        pods.cluster_id,
        pods.namespace,
        pods.deployment_name,
        pods.model_name,
        -- a pod-day counted but with no cost allocated that day belongs to the pod's owner
        coalesce(pod_days.team_id, pods.owner_team_id) as team_id,
        pod_days.billing_currency,
        pod_days.usage_date,
        min(pods.engine) as engine,
        count(distinct pod_days.pod_key) as pod_count,
        cast(sum(pod_days.prompt_tokens) as bigint) as prompt_tokens,
        cast(sum(pod_days.generation_tokens) as bigint) as generation_tokens,
        cast(sum(pod_days.request_count) as bigint) as request_count,
        cast(sum(pod_days.failed_request_count) as bigint) as failed_request_count,
        cast(sum(pod_days.counter_reset_count) as bigint) as counter_reset_count,
        cast(sum(pod_days.effective_cost) as {{ money_type() }}) as effective_cost,
        cast(sum(pod_days.billed_cost) as {{ money_type() }}) as billed_cost,
        cast(sum(pod_days.gpu_effective_cost) as {{ money_type() }}) as gpu_effective_cost
    from pod_days
    inner join pods on pod_days.pod_key = pods.pod_key
    group by 1, 2, 3, 4, 5, 6, 7

),

with_totals as (

    select
        *,
        prompt_tokens + generation_tokens as total_tokens,
        -- the exact cost as integer 1e-18 units: the ratios divide these, never a DOUBLE
        {{ money_units('effective_cost') }} as cost_units
    from grouped

),

final as (

    select
        md5(
            coalesce(cluster_id, '') || '|' || coalesce(namespace, '') || '|' || coalesce(deployment_name, '')
            || '|' || coalesce(model_name, '') || '|' || team_id || '|' || coalesce(billing_currency, '')
            || '|' || cast(usage_date as string)
        ) as inference_unit_cost_id,
        cluster_id,
        namespace,
        deployment_name,
        model_name,
        team_id,
        engine,
        billing_currency,
        pod_count,
        prompt_tokens,
        generation_tokens,
        total_tokens,
        request_count,
        failed_request_count,
        counter_reset_count,
        effective_cost,
        billed_cost,
        gpu_effective_cost,
        -- the lint's templater lays the loop's two ratios out as one:
        -- noqa: disable=LT02
        {%- for name, denominator, per in ratios %}
        case
            when {{ denominator }} > 0
                then cast({{ units_money_text(int_div('cost_units * ' ~ per, denominator)) }} as {{ money_type() }})
        end as {{ name }},
        {%- endfor %}
        -- noqa: enable=LT02
        usage_date
    from with_totals

)

select * from final
