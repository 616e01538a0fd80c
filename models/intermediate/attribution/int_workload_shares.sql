-- Shared workloads: per workload that serves several projects, each consuming project and its weight.
-- Declared weights (seed attribution_shared_workloads) win; otherwise weights derived from lineage (seed
-- attribution_lineage: producer pattern -> consumer project, weighted by reads). Only known projects count.
with

workloads as (

    -- the fields attribution patterns match on (see macro attribution_field)
    select
        *,
        user_id as label_user_id
    from {{ ref('int_workload_owners_declared') }}

),

declared_shares as (

    select * from {{ ref('attribution_shared_workloads') }}

),

lineage as (

    select * from {{ ref('attribution_lineage') }}

),

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

),

mapping_size as (

    select count(*) as known_projects from org_mapping

),

declared as (

    select
        workloads.workload_id,
        'declared' as share_source,
        declared_shares.share_id,
        lower(trim(declared_shares.project_id)) as project_id,
        sum(declared_shares.weight) as weight
    from workloads
    inner join declared_shares
        on {{ regexp_search() }}(
            {{ attribution_field('workloads', 'declared_shares.match_field') }}, declared_shares.match_pattern
        )
    -- weights count in micro-units (gpucost.core.split.weight_units): one below 1e-6 would weigh nothing
    where declared_shares.weight >= 0.000001
    group by 1, 2, 3, 4

),

derived as (

    select
        workloads.workload_id,
        'lineage' as share_source,
        'lineage' as share_id,
        lower(trim(lineage.consumer_project_id)) as project_id,
        cast(sum(lineage.reads) as {{ money_type() }}) as weight
    from workloads
    inner join lineage
        on {{ regexp_search() }}(
            {{ attribution_field('workloads', 'lineage.producer_field') }}, lineage.producer_pattern
        )
    where
        lineage.reads > 0
        and workloads.workload_id not in (select declared.workload_id from declared)
    group by 1, 2, 3, 4

),

shares as (

    select * from declared
    union all
    select * from derived

),

final as (

    select
        shares.workload_id,
        shares.share_source,
        shares.share_id,
        coalesce(org_mapping.team_id, '{{ unallocated_owner() }}') as team_id,
        shares.project_id,
        cast(shares.weight as {{ money_type() }}) as weight
    from shares
    cross join mapping_size
    left join org_mapping on shares.project_id = org_mapping.project_id
    where mapping_size.known_projects = 0 or org_mapping.project_id is not null

)

select * from final
