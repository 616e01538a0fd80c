-- The org mapping out of date: every project its own pods show handed to another team
-- (int_project_team_handovers), with the evidence, the workloads the build charged to the new team from the
-- hand-over on and their cost, per currency, ranked by that cost. Correct reference/*.csv (the project's team)
-- to settle it: the build then charges the project's whole window to the mapped team again, unless its pods
-- still show the change.
with

handovers as (

    select * from {{ ref('int_project_team_handovers') }}

),

org_projects as (

    select * from {{ ref('int_org_projects') }}

),

workloads as (

    select * from {{ ref('int_workloads') }}

),

allocations as (

    select * from {{ ref('fct_cost_allocation') }}
    where workload_id is not null

),

moved as (

    -- a project reaches its new team only through the hand-over (int_workloads)
    select
        workloads.project_id,
        workloads.workload_id
    from workloads
    inner join handovers
        on
        workloads.project_id = handovers.project_id
        and workloads.team_id = handovers.to_team_id

),

moved_counts as (

    select
        project_id,
        count(*) as workloads_moved
    from moved
    group by 1

),

moved_costs as (

    select
        moved.project_id,
        allocations.billing_currency,
        sum(allocations.effective_cost) as moved_effective_cost
    from moved
    inner join allocations on moved.workload_id = allocations.workload_id
    group by 1, 2

),

final as (

    select
        cast(row_number() over (
            order by
                coalesce(moved_costs.moved_effective_cost, 0) desc,
                handovers.project_id asc,
                moved_costs.billing_currency asc
        ) as bigint) as handover_rank,
        handovers.project_id,
        org_projects.project_name,
        handovers.from_team_id,
        handovers.to_team_id,
        {{ from_epoch_seconds('handovers.handed_over_epoch') }} as handed_over_at,
        cast(handovers.pods_before as bigint) as pods_before,
        cast(handovers.pods_before_agreeing as bigint) as pods_before_agreeing,
        cast(handovers.pods_after as bigint) as pods_after,
        cast(handovers.pods_after_agreeing as bigint) as pods_after_agreeing,
        handovers.first_workload_id,
        cast(coalesce(moved_counts.workloads_moved, 0) as bigint) as workloads_moved,
        moved_costs.billing_currency,
        cast(coalesce(moved_costs.moved_effective_cost, 0) as {{ money_type() }}) as moved_effective_cost
    from handovers
    left join org_projects on handovers.project_id = org_projects.project_id
    left join moved_counts on handovers.project_id = moved_counts.project_id
    left join moved_costs on handovers.project_id = moved_costs.project_id

)

select * from final
