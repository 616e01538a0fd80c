-- One row per bill line x owner x allocation kind: where every cent of the bill went.
with

placed as (

    select * from {{ ref('int_cost_allocations_owned') }}

),

shared_spread as (

    select * from {{ ref('int_shared_costs_spread') }}

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

classified as (

    select * from {{ ref('int_bill_lines_classified') }}

),

workloads as (

    select * from {{ ref('int_workloads') }}

),

shared as (

    select
        charge_id,
        cast(null as string) as workload_id,
        coalesce(split_part(recipient_id, '|', 1), '{{ unallocated_owner() }}') as team_id,
        coalesce(split_part(recipient_id, '|', 2), '{{ unallocated_owner() }}') as project_id,
        cast(null as string) as user_id,
        case
            when recipient_id is null or split_part(recipient_id, '|', 2) = '{{ unallocated_owner() }}'
                then 'unallocated'
            else 'shared'
        end as allocation_kind,
        'shared_by_effective_cost' as allocation_basis,
        case when recipient_id is null then 'none' else 'policy' end as attribution_method,
        cast(null as string) as attribution_rule_id,
        cast(case when recipient_id is null then 0 else 1 end as double) as attribution_confidence,
        case
            when recipient_id is null then unallocated_reason
            when split_part(recipient_id, '|', 2) = '{{ unallocated_owner() }}'
                then 'shared_cost_share_of_unallocated_cost'
        end as unallocated_reason,
        allocation_ratio,
        billed_cost,
        effective_cost
    from shared_spread

),

allocations as (

    select * from placed
    union all
    select * from shared

),

final as (

    select
        md5(
            allocations.charge_id || '|' || allocations.allocation_kind || '|' || allocations.allocation_basis
            || '|' || coalesce(allocations.workload_id, '') || '|' || allocations.team_id
            || '|' || allocations.project_id || '|' || coalesce(allocations.user_id, '')
        ) as allocation_id,
        allocations.charge_id,
        charges.provider_name,
        charges.billing_account_id,
        charges.sub_account_id,
        charges.invoice_id,
        charges.resource_id,
        classified.cluster_id,
        classified.node_name,
        allocations.workload_id,
        allocations.team_id,
        allocations.project_id,
        allocations.user_id,
        charges.service_name,
        charges.service_category,
        charges.charge_category,
        classified.line_class,
        -- a GPU node line's CPU and memory parts (allocation_basis cpu:... / memory:...) are what they bought
        case
            when allocations.allocation_basis like 'cpu:%' then 'compute_cpu'
            when allocations.allocation_basis like 'memory:%' then 'compute_memory'
            else classified.cost_component
        end as cost_component,
        charges.source_format,
        case
            when classified.line_class = 'idle_commitment' and allocations.allocation_kind = 'shared' then 'idle'
            else allocations.allocation_kind
        end as allocation_kind,
        allocations.allocation_basis,
        allocations.attribution_method,
        allocations.attribution_rule_id,
        cast(allocations.attribution_confidence as decimal(9, 6)) as attribution_confidence,
        -- the model version whose score placed the row (the workload's); null for every other method
        case
            when allocations.attribution_method in ({{ learned_project_methods() }}, {{ learned_team_methods() }})
                then workloads.attribution_model_version
        end as attribution_model_version,
        allocations.unallocated_reason,
        cast(allocations.allocation_ratio as {{ money_type() }}) as allocation_ratio,
        cast(allocations.billed_cost as {{ money_type() }}) as billed_cost,
        cast(allocations.effective_cost as {{ money_type() }}) as effective_cost,
        charges.billing_currency,
        charges.billing_period_start,
        charges.charge_period_start_at,
        charges.charge_period_end_at
    from allocations
    inner join charges on allocations.charge_id = charges.charge_id
    inner join classified on allocations.charge_id = classified.charge_id
    left join workloads on allocations.workload_id = workloads.workload_id

)

select * from final
