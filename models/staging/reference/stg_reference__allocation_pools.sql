-- GPU allocation basis per node pool: the seed allocation_pools, plus any landed as
-- <landing>/reference/allocation_pools/*.csv (same columns), so a pool's basis can change without a code change.
with

seeded as (

    select * from {{ ref('allocation_pools') }}

),

landed as (

    {{ read_optional_csv(
        'reference/allocation_pools/*.csv',
        ['pool_id', 'priority', 'cluster_pattern', 'node_pattern', 'gpu_model_pattern', 'gpu_allocation_basis',
         'complexity_weighting', 'description']
    ) }}

),

unioned as (

    select
        pool_id,
        cast(priority as string) as priority,
        cluster_pattern,
        node_pattern,
        gpu_model_pattern,
        gpu_allocation_basis,
        cast(complexity_weighting as string) as complexity_weighting,
        description,
        'seed allocation_pools' as source_file
    from seeded
    union all
    select
        pool_id,
        priority,
        cluster_pattern,
        node_pattern,
        gpu_model_pattern,
        gpu_allocation_basis,
        complexity_weighting,
        description,
        filename as source_file
    from landed

),

final as (

    select
        trim(pool_id) as pool_id,
        -- a value that does not parse stays null and fails the not_null / accepted_values tests
        try_cast(trim(priority) as integer) as priority,
        nullif(trim(cluster_pattern), '') as cluster_pattern,
        nullif(trim(node_pattern), '') as node_pattern,
        nullif(trim(gpu_model_pattern), '') as gpu_model_pattern,
        lower(trim(gpu_allocation_basis)) as gpu_allocation_basis,
        coalesce(try_cast(trim(complexity_weighting) as boolean), false) as complexity_weighting,
        description,
        source_file
    from unioned

)

select * from final
