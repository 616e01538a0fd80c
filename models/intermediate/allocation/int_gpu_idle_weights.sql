-- Who was active in each idle scope, and how much (their basis GPU-milliseconds). Per node line: one row per
-- workload. Per cluster-day (the fallback scope for a node line nobody used): one row per owner (team and
-- project, attributed or not), since a cluster-day holds thousands of workloads and every idle line of it would
-- otherwise be split over all of them (5,123 unused node-hours x 4,350 workloads = 22 M rows on a 1,000-node
-- day).
with

prorated as (

    select * from {{ ref('int_gpu_costs_prorated') }}
    where allocation_kind = 'usage'

),

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

owners as (

    select * from {{ ref('int_workload_owners_resolved') }}

),

usage as (

    select
        lines.charge_id,
        lines.cluster_id,
        lines.charge_date,
        prorated.workload_id,
        owners.team_id,
        owners.project_id,
        owners.owner_key,
        owners.attribution_method,
        owners.attribution_rule_id,
        owners.attribution_confidence,
        owners.unattributed_reason,
        owners.is_attributed,
        prorated.basis_gpu_ms
    from prorated
    inner join lines on prorated.charge_id = lines.charge_id
    left join owners on prorated.workload_id = owners.workload_id

),

by_node_hour as (

    select
        {{ idle_scope_key('usage', 'node_hour') }} as scope_key,
        {{ idle_scope_key('usage', 'cluster_day') }} as cluster_day_key,
        usage.workload_id,
        cast(null as string) as recipient_group,
        usage.owner_key,
        cast(null as string) as team_id,
        cast(null as string) as project_id,
        cast(null as string) as attribution_method,
        cast(null as string) as attribution_rule_id,
        cast(null as double) as attribution_confidence,
        cast(null as string) as unattributed_reason,
        cast(null as boolean) as is_attributed,
        cast(sum(usage.basis_gpu_ms) as bigint) as weight
    from usage
    group by 1, 2, 3, 4, 5

),

cluster_day_decisions as (

    -- the cluster-day's GPU time per owner and way of deciding it; confidence summed exactly (decimal, to
    -- 1e-9), so the result does not depend on the order of addition
    select
        {{ idle_scope_key('usage', 'cluster_day') }} as scope_key,
        usage.owner_key,
        usage.team_id,
        usage.project_id,
        usage.is_attributed,
        usage.attribution_method,
        usage.attribution_rule_id,
        usage.unattributed_reason,
        sum(cast(usage.basis_gpu_ms as decimal(38, 0))) as weight,
        sum(
            cast(usage.basis_gpu_ms as decimal(38, 0)) * cast(round(usage.attribution_confidence, 9) as decimal(38, 9))
        ) as confidence_weight
    from usage
    group by 1, 2, 3, 4, 5, 6, 7, 8

),

cluster_day_ranked as (

    select
        *,
        row_number() over (
            partition by scope_key, owner_key, is_attributed
            order by weight desc, attribution_method asc, attribution_rule_id asc, unattributed_reason asc
        ) as decision_rank
    from cluster_day_decisions

),

by_cluster_day as (

    -- one group per owner (owner_key is team|project; and whether it is attributed); its method, rule and
    -- reason are those of most of its GPU time, its confidence the GPU-time-weighted mean over all of it
    select
        scope_key,
        scope_key as cluster_day_key,
        cast(null as string) as workload_id,
        'group:' || owner_key || '|' || case when is_attributed then 'attributed' else 'unattributed' end
            as recipient_group,
        owner_key,
        team_id,
        project_id,
        max(case when decision_rank = 1 then attribution_method end) as attribution_method,
        max(case when decision_rank = 1 then attribution_rule_id end) as attribution_rule_id,
        cast(sum(confidence_weight) / sum(weight) as double) as attribution_confidence,
        max(case when decision_rank = 1 then unattributed_reason end) as unattributed_reason,
        is_attributed,
        cast(sum(weight) as bigint) as weight
    from cluster_day_ranked
    group by 1, 2, 5, 6, 7, 12

),

final as (

    select * from by_node_hour
    union all
    select * from by_cluster_day

)

select * from final
