-- The review queue: every workload whose owner nobody declared and the learned model could not place with
-- confidence at or above the build's auto threshold (int_workload_attribution_scores), with its top-3
-- candidates, the signals behind the first one and the cost at stake, ranked by cost. Accepting a suggestion
-- means adding the row's suggested_override to seeds/attribution_overrides.csv; the next build uses it as a
-- label.
with

workloads as (

    select * from {{ ref('int_workloads') }}
    where attribution_method in ('none', 'suspense')

),

shares as (

    select * from {{ ref('int_workload_shares') }}

),

predictions as (

    select * from {{ ref('int_workload_attribution_predictions') }}

),

allocations as (

    select * from {{ ref('fct_cost_allocation') }}
    where workload_id is not null

),

costs as (

    select
        workload_id,
        billing_currency,
        sum(billed_cost) as billed_cost,
        sum(effective_cost) as effective_cost
    from allocations
    group by 1, 2

),

joined as (

    select
        workloads.workload_id,
        workloads.cluster_id,
        workloads.namespace,
        workloads.pod,
        workloads.user_id,
        workloads.label_team_id,
        workloads.label_project_id,
        workloads.attribution_method,
        workloads.unattributed_reason,
        predictions.candidate_1_project_id,
        cast(predictions.candidate_1_probability as decimal(9, 6)) as candidate_1_probability,
        predictions.candidate_2_project_id,
        cast(predictions.candidate_2_probability as decimal(9, 6)) as candidate_2_probability,
        predictions.candidate_3_project_id,
        cast(predictions.candidate_3_probability as decimal(9, 6)) as candidate_3_probability,
        predictions.attribution_signals,
        coalesce(costs.billing_currency, 'USD') as billing_currency,
        cast(coalesce(costs.billed_cost, 0) as {{ money_type() }}) as billed_cost,
        cast(coalesce(costs.effective_cost, 0) as {{ money_type() }}) as effective_cost
    from workloads
    left join predictions on workloads.workload_id = predictions.workload_id
    left join costs on workloads.workload_id = costs.workload_id
    -- a shared workload's cost is placed by its consumers' weights, not by one owner
    where workloads.workload_id not in (select shares.workload_id from shares)

),

final as (

    select
        row_number() over (
            order by effective_cost desc, billed_cost desc, workload_id asc, billing_currency asc
        ) as review_rank,
        *,
        case
            when candidate_1_project_id is not null
                then
                    'review-' || left(md5(workload_id), 10) || ',workload_id,^'
                    || regexp_replace(workload_id, '([.^$*+?()\[\]{}|\\])', '\\\1', 'g') || '$,'
                    || candidate_1_project_id || ',<your name>,<yyyy-mm-dd>,accepted model suggestion (p='
                    || cast(round(candidate_1_probability, 3) as string) || ')'
        end as suggested_override
    from joined

)

select * from final
