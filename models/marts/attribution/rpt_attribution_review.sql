-- The review queue: every workload whose owner nobody declared and the learned model could not place with
-- confidence at or above the build's auto threshold (int_workload_attribution_scores), with its top-3
-- candidates (each with the team its project belongs to in the org mapping), the signals behind the first one
-- and the cost at stake, ranked by cost. review_reason says why an item is here: unplaced (no owner),
-- team_only (placed on a team, model_team / cold_start_team: its project is still to be found) or
-- suspected_mislabel (a tag its own signals contradict; the tag wins until a decision: accepting the candidate
-- overrides the tag, rejecting confirms it). A decision (`gpucost review accept|reassign|reject`, or the
-- dashboard's review page) appends an override row to seeds/attribution_overrides.csv; the next build reads it
-- as a label, or, for a rejection (no project), as "owner unknown": the workload leaves the queue
-- (attribution_method review_rejected, unattributed_reason rejected_in_review, also when parked with the suspense
-- owner).
with

workloads as (

    select * from {{ ref('int_workloads') }}
    where
        attribution_method in ('none', 'suspense', 'model_team', 'cold_start_team')
        and coalesce(unattributed_reason, '') not like '%rejected_in_review'

),

suspected as (

    -- tagged workloads whose label-blind prediction contradicts the tag (the tag still wins); a workload a
    -- person already decided on (an override) is not asked again
    select scores.*
    from {{ ref('int_workload_attribution_scores') }} as scores
    inner join {{ ref('int_workloads') }} as tagged
        on scores.workload_id = tagged.workload_id
    where
        scores.scored_set = 'suspected_mislabel'
        and tagged.attribution_method in ('pod_label', 'slurm_account')

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

items as (

    select
        workloads.workload_id,
        case
            when workloads.attribution_method in ('model_team', 'cold_start_team') then 'team_only'
            else 'unplaced'
        end as review_reason,
        predictions.candidate_1_project_id,
        predictions.candidate_1_probability,
        predictions.candidate_2_project_id,
        predictions.candidate_2_probability,
        predictions.candidate_3_project_id,
        predictions.candidate_3_probability,
        predictions.attribution_signals
    from workloads
    left join predictions on workloads.workload_id = predictions.workload_id
    union all
    select
        workload_id,
        'suspected_mislabel' as review_reason,
        candidate_1_project_id,
        candidate_1_probability,
        candidate_2_project_id,
        candidate_2_probability,
        candidate_3_project_id,
        candidate_3_probability,
        attribution_signals
    from suspected

),

all_workloads as (

    select * from {{ ref('int_workloads') }}

),

joined as (

    select
        all_workloads.workload_id,
        all_workloads.cluster_id,
        all_workloads.namespace,
        all_workloads.pod,
        all_workloads.user_id,
        all_workloads.label_team_id,
        all_workloads.label_project_id,
        all_workloads.attribution_method,
        all_workloads.unattributed_reason,
        items.review_reason,
        items.candidate_1_project_id,
        candidate_1_projects.team_id as candidate_1_team_id,
        cast(items.candidate_1_probability as decimal(9, 6)) as candidate_1_probability,
        items.candidate_2_project_id,
        candidate_2_projects.team_id as candidate_2_team_id,
        cast(items.candidate_2_probability as decimal(9, 6)) as candidate_2_probability,
        items.candidate_3_project_id,
        candidate_3_projects.team_id as candidate_3_team_id,
        cast(items.candidate_3_probability as decimal(9, 6)) as candidate_3_probability,
        items.attribution_signals,
        coalesce(costs.billing_currency, 'USD') as billing_currency,
        cast(coalesce(costs.billed_cost, 0) as {{ money_type() }}) as billed_cost,
        cast(coalesce(costs.effective_cost, 0) as {{ money_type() }}) as effective_cost
    from items
    inner join all_workloads on items.workload_id = all_workloads.workload_id
    left join org_projects as candidate_1_projects
        on items.candidate_1_project_id = candidate_1_projects.project_id
    left join org_projects as candidate_2_projects
        on items.candidate_2_project_id = candidate_2_projects.project_id
    left join org_projects as candidate_3_projects
        on items.candidate_3_project_id = candidate_3_projects.project_id
    left join costs on items.workload_id = costs.workload_id
    -- a shared workload's cost is placed by its consumers' weights, not by one owner
    where items.workload_id not in (select shares.workload_id from shares)

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
