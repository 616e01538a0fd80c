-- GPU time and its cost: one row per GPU node bill line and workload (plus one idle row per line),
-- with requested / used GPU-hours and the cost of allocated GPU time that was not used (waste).
-- Costs here are the usage shares before idle spreading; fct_cost_allocation holds the full picture.
with

prorated as (

    select * from {{ ref('int_gpu_costs_prorated') }}
    where allocation_kind in ('usage', 'idle')

),

line_workloads as (

    select * from {{ ref('int_gpu_node_line_workloads') }}

),

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

nodes as (

    select * from {{ ref('int_gpu_nodes') }}

),

owners as (

    -- every workload's owner, resolved once; the line's idle and unallocated parts have no workload
    select * from {{ ref('int_workload_owners_resolved') }}

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

joined as (

    select
        prorated.charge_id,
        prorated.workload_id,
        prorated.allocation_kind as usage_kind,
        prorated.allocation_basis,
        lines.cluster_id,
        lines.node_name,
        nodes.gpu_model,
        case
            when prorated.allocation_kind = 'idle' then '{{ idle_owner() }}'
            else coalesce(owners.team_id, '{{ unallocated_owner() }}')
        end as team_id,
        case
            when prorated.allocation_kind = 'idle' then '{{ idle_owner() }}'
            else coalesce(owners.project_id, '{{ unallocated_owner() }}')
        end as project_id,
        owners.user_id,
        coalesce(owners.attribution_method, 'none') as attribution_method,
        prorated.basis_gpu_ms,
        coalesce(line_workloads.requested_gpu_ms, 0) as requested_gpu_ms,
        prorated.used_gpu_ms,
        prorated.utilised_cost,
        prorated.billed_cost,
        prorated.effective_cost,
        charges.billing_currency,
        charges.billing_period_start,
        charges.charge_period_start_at
    from prorated
    inner join lines on prorated.charge_id = lines.charge_id
    inner join charges on prorated.charge_id = charges.charge_id
    left join nodes on lines.node_id = nodes.node_id
    left join line_workloads
        on
        prorated.charge_id = line_workloads.charge_id
        and prorated.workload_id = line_workloads.workload_id
    left join owners on prorated.workload_id = owners.workload_id

),

final as (

    select
        md5(charge_id || '|' || coalesce(workload_id, '<idle>')) as gpu_usage_id,
        charge_id,
        workload_id,
        cluster_id,
        node_name,
        gpu_model,
        team_id,
        project_id,
        user_id,
        usage_kind,
        allocation_basis,
        attribution_method,
        -- hours are measures, not money: ms / 3.6e6 rounded to the microhour
        cast(basis_gpu_ms / 3600000.0 as decimal(18, 6)) as gpu_hours,
        cast(requested_gpu_ms / 3600000.0 as decimal(18, 6)) as requested_gpu_hours,
        cast(used_gpu_ms / 3600000.0 as decimal(18, 6)) as used_gpu_hours,
        cast(billed_cost as {{ money_type() }}) as billed_cost,
        cast(effective_cost as {{ money_type() }}) as effective_cost,
        -- the part of the row's cost matching busy GPU time (exact split in the Python model); the rest is waste
        cast(utilised_cost as {{ money_type() }}) as utilised_cost,
        cast(billed_cost - utilised_cost as {{ money_type() }}) as wasted_cost,
        billing_currency,
        billing_period_start,
        cast(charge_period_start_at as date) as usage_date,
        charge_period_start_at as usage_hour_at
    from joined

)

select * from final
