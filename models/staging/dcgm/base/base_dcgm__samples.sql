{{ config(materialized='table') }}

-- DCGM exporter series scraped into Prometheus, landed as query_range JSON: read once, long form.
with

source as (

    {{ read_prometheus_matrix('metrics/dcgm') }}

),

labelled as (

    select
        {{ prom_label('__name__') }} as metric_name,
        {{ prom_cluster('metrics/dcgm') }} as cluster_id,
        coalesce(
            {{ prom_label('Hostname') }},
            {{ prom_label('hostname') }},
            {{ prom_label('kubernetes_node') }},
            {{ prom_label('node') }}
        ) as node_name,
        {{ prom_label('UUID') }} as gpu_uuid,
        {{ prom_label('gpu') }} as gpu_index,
        {{ prom_label('modelName') }} as gpu_model,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('container') }} as container,
        -- MIG: the GPU instance a series is about (dcgm-exporter labels GPU_I_ID / GPU_I_PROFILE)
        {{ prom_label('GPU_I_ID') }} as gpu_instance_id,
        {{ prom_label('GPU_I_PROFILE') }} as gpu_instance_profile,
        -- HPC: the Slurm job id dcgm-exporter's --hpc-job-mapping-dir attaches to a GPU
        {{ prom_label('hpc_job') }} as hpc_job,
        cast(round(sampled_epoch) as bigint) as sampled_epoch,
        try_cast(sample_value as double) as sample_value,
        sample_value as sample_value_raw,
        filename as source_file
    from source

),

final as (

    select
        *,
        case
            when gpu_uuid is null then 'GPU series without a UUID label'
            when node_name is null then 'GPU series with no node (no Hostname / hostname label)'
            when sample_value is null or {{ is_not_finite("sample_value") }}
                then 'non-numeric sample value: ' || coalesce(sample_value_raw, '<null>')
            when sampled_epoch < {{ var('gpucost_min_epoch') }} or sampled_epoch > {{ var('gpucost_max_epoch') }}
                then 'timestamp out of range: ' || cast(sampled_epoch as string)
            when sample_value < 0 then 'negative value: ' || sample_value_raw
            when metric_name = 'DCGM_FI_DEV_GPU_UTIL' and sample_value > 100
                then 'GPU_UTIL above 100: ' || sample_value_raw
            when metric_name = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' and sample_value > 1
                then 'PROF_GR_ENGINE_ACTIVE above 1: ' || sample_value_raw
        end as quarantine_reason
    from labelled

)

select * from final
