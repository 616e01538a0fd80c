-- DCGM samples in long form, one row per metric sample (valid ones with a null quarantine_reason), from
-- the series table that holds them as typed lists: a view, nothing is stored twice (its two readers
-- want the energy counter or the quarantined samples only; at 1,000 nodes the table took 34 s).
{{ config(materialized='table' if target.type == 'spark' else 'view') }}

with

series as (

    -- a file without series has no valid sample; its quarantined_samples hold the file's reason
    select * from {{ ref('base_dcgm__series') }}

),

valid as (

    select
        metric_name,
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_index,
        gpu_model,
        namespace,
        pod,
        container,
        gpu_instance_id,
        gpu_instance_profile,
        hpc_job,
        {{ unnest_zip([('sampled_epochs', 'sampled_epoch'), ('sample_values', 'sample_value')]) }},
        cast(null as string) as sample_value_raw,
        source_file,
        cast(null as string) as quarantine_reason
    from series
    where sample_count > 0

),

quarantined as (

    select
        metric_name,
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_index,
        gpu_model,
        namespace,
        pod,
        container,
        gpu_instance_id,
        gpu_instance_profile,
        hpc_job,
        {{ unnest_as('quarantined_samples', 'sample') }},
        source_file
    from series
    where {{ list_size('quarantined_samples') }} > 0

),

final as (

    select * from valid
    union all
    select
        metric_name,
        cluster_id,
        node_name,
        gpu_uuid,
        gpu_index,
        gpu_model,
        namespace,
        pod,
        container,
        gpu_instance_id,
        gpu_instance_profile,
        hpc_job,
        sample.sampled_epoch,
        sample.sample_value,
        sample.sample_value_raw,
        source_file,
        sample.quarantine_reason
    from quarantined

)

select * from final
