-- The review queue: every workload whose owner nobody declared and the learned model could not place with
-- confidence at or above the build's auto threshold (int_workload_attribution_scores), with its top-3
-- candidates (each with the team its project belongs to in the org mapping), the signals behind the first one
-- and the cost at stake, ranked by cost. review_reason says why an item is here (unplaced: no owner; more
-- reasons may join). A decision (`gpucost review accept|reassign|reject`, or the dashboard's review page)
-- appends an override row to seeds/attribution_overrides.csv; the next build reads it as a label, or, for a
-- rejection (no project), as "owner unknown": the workload leaves the queue (attribution_method
-- review_rejected, unattributed_reason rejected_in_review, also when parked with the suspense owner).
with

workloads as (

    select * from {{ ref('int_workloads') }}
    where
        attribution_method in ('none', 'suspense')
        and coalesce(unattributed_reason, '') not like '%rejected_in_review'

),

shares as (

    select * from {{ ref('int_workload_shares') }}

),

predictions as (

    select * from {{ ref('int_workload_attribution_predictions') }}

),

org_projects as (

    select * from {{ ref('int_org_projects') }}

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
        'unplaced' as review_reason,
        predictions.candidate_1_project_id,
        candidate_1_projects.team_id as candidate_1_team_id,
        cast(predictions.candidate_1_probability as decimal(9, 6)) as candidate_1_probability,
        predictions.candidate_2_project_id,
        candidate_2_projects.team_id as candidate_2_team_id,
        cast(predictions.candidate_2_probability as decimal(9, 6)) as candidate_2_probability,
        predictions.candidate_3_project_id,
        candidate_3_projects.team_id as candidate_3_team_id,
        cast(predictions.candidate_3_probability as decimal(9, 6)) as candidate_3_probability,
        predictions.attribution_signals,
        coalesce(costs.billing_currency, 'USD') as billing_currency,
        cast(coalesce(costs.billed_cost, 0) as {{ money_type() }}) as billed_cost,
        cast(coalesce(costs.effective_cost, 0) as {{ money_type() }}) as effective_cost
    from workloads
    left join predictions on workloads.workload_id = predictions.workload_id
    left join org_projects as candidate_1_projects
        on predictions.candidate_1_project_id = candidate_1_projects.project_id
    left join org_projects as candidate_2_projects
        on predictions.candidate_2_project_id = candidate_2_projects.project_id
    left join org_projects as candidate_3_projects
        on predictions.candidate_3_project_id = candidate_3_projects.project_id
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
