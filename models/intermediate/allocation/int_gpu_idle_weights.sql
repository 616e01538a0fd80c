-- Who was active in each idle scope, and how much (their basis GPU-milliseconds).
with

prorated as (

    select * from {{ ref('int_gpu_costs_prorated') }}
    where allocation_kind = 'usage'

),

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

workloads as (

    select * from {{ ref('int_workloads') }}

),

final as (

    select
        {{ idle_scope_key('lines') }} as scope_key,
        prorated.workload_id,
        coalesce(workloads.owner_key, '{{ unallocated_owner() }}|{{ unallocated_owner() }}') as owner_key,
        cast(sum(prorated.basis_gpu_ms) as bigint) as weight
    from prorated
    inner join lines on prorated.charge_id = lines.charge_id
    left join workloads on prorated.workload_id = workloads.workload_id
    group by 1, 2, 3

)

select * from final
