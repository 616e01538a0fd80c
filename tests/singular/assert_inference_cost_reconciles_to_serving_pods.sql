{{ config(enabled=target.type != 'spark') }}
-- fct_inference_unit_cost's cost adds up exactly, per currency, to the GPU node cost fct_cost_allocation
-- allocated to the serving pods: the pods with a serving counter (found here from the counters and
-- kube-state-metrics, not from the mart's intermediate models). Any row returned is a difference.
with

serving_pod_keys as (

    select distinct pod_key from {{ ref('stg_serving__counter_increases') }}

),

serving_workloads as (

    select distinct kube_pods.workload_id
    from {{ ref('stg_kube__pods') }} as kube_pods
    inner join serving_pod_keys on kube_pods.pod_key = serving_pod_keys.pod_key

),

allocated as (

    select
        allocations.billing_currency,
        sum(allocations.effective_cost) as effective_cost,
        sum(allocations.billed_cost) as billed_cost
    from {{ ref('fct_cost_allocation') }} as allocations
    inner join serving_workloads on allocations.workload_id = serving_workloads.workload_id
    where allocations.cost_component in ('compute_gpu', 'compute_cpu', 'compute_memory')
    group by 1

),

mart as (

    select
        billing_currency,
        sum(effective_cost) as effective_cost,
        sum(billed_cost) as billed_cost
    from {{ ref('fct_inference_unit_cost') }}
    where billing_currency is not null
    group by 1

),

final as (

    select
        coalesce(allocated.billing_currency, mart.billing_currency) as billing_currency,
        allocated.effective_cost as allocated_effective_cost,
        mart.effective_cost as mart_effective_cost,
        allocated.billed_cost as allocated_billed_cost,
        mart.billed_cost as mart_billed_cost
    from allocated
    full outer join mart on allocated.billing_currency = mart.billing_currency
    where
        allocated.effective_cost is distinct from mart.effective_cost
        or allocated.billed_cost is distinct from mart.billed_cost

)

select * from final
