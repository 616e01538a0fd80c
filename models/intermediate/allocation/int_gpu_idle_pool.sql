-- The idle part of each GPU node line, with the scope its idle cost is spread within.
with

prorated as (

    select * from {{ ref('int_gpu_costs_prorated') }}
    where allocation_kind = 'idle'

),

lines as (

    select * from {{ ref('int_gpu_node_lines') }}

),

final as (

    select
        prorated.charge_id,
        {{ idle_scope_keys('lines') }} as scope_keys,
        {{ reservation_scope_key('lines') }} as reservation_scope_key,
        {{ idle_scope_key('lines', 'cluster_day') }} as cluster_day_key,
        prorated.basis_gpu_ms as idle_gpu_ms,
        prorated.billed_cost,
        prorated.effective_cost,
        prorated.allocation_ratio
    from prorated
    inner join lines on prorated.charge_id = lines.charge_id

)

select * from final
