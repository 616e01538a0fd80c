-- Who was active in each idle scope, and how much (their basis GPU-milliseconds): per node line, and per
-- cluster-day (the fallback scope for a node line nobody used).
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

usage as (

    select
        lines.charge_id,
        lines.cluster_id,
        lines.charge_date,
        prorated.workload_id,
        coalesce(workloads.owner_key, '{{ unallocated_owner() }}|{{ unallocated_owner() }}') as owner_key,
        prorated.basis_gpu_ms
    from prorated
    inner join lines on prorated.charge_id = lines.charge_id
    left join workloads on prorated.workload_id = workloads.workload_id

),

{%- for level in ['node_hour', 'cluster_day'] %}

    by_{{ level }} as (

        select
            {{ idle_scope_key('usage', level) }} as scope_key,
            usage.workload_id,
            usage.owner_key,
            cast(sum(usage.basis_gpu_ms) as bigint) as weight
        from usage
        group by 1, 2, 3

    ),
{%- endfor %}

final as (

    select * from by_node_hour
    union all
    select * from by_cluster_day

)

select * from final
