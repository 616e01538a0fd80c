-- One row per sacct record: job allocations (JobID 1234, array task 1234_5, het component 1234+0) and their
-- steps (1234.batch, 1234.extern, 1234.0). Allocations carry the money; steps are usage signals only.
-- Typed here; a record that cannot be read keeps its line and gets a quarantine_reason.
{%- set job_id_pattern %}^([0-9]+)(_([0-9]+|\[[^\]]*\]))?(\+[0-9]+)?(\.(.+))?${% endset %}
{%- set elapsed_pattern %}^(([0-9]+)-)?([0-9]+):([0-9]+):([0-9]+)${% endset %}
{%- set memory_pattern %}(^|,)mem=([0-9.]+)([KMGTP]?){% endset %}
with

source as (

    select * from {{ ref('base_slurm__sacct_lines') }}

),

fields as (

    select
        filename as source_file,
        source_row_number,
        line as raw_line,
        file_quarantine_reason,
        {{ list_size('fields') }} as field_count,
        {{ list_size('header') }} as header_count,
        {{ sacct_field('JobID') }} as job_id_text,
        {{ sacct_field('JobIDRaw') }} as job_id_raw,
        {{ sacct_field('JobName') }} as job_name,
        {{ sacct_field('User') }} as user_name,
        lower({{ sacct_field('Account') }}) as account,
        {{ sacct_field('Partition') }} as partition_name,
        {{ sacct_field('Cluster') }} as cluster_field,
        {{ sacct_field('Submit') }} as submit_raw,
        {{ sacct_field('Start') }} as start_raw,
        {{ sacct_field('End') }} as end_raw,
        {{ sacct_field('Elapsed') }} as elapsed_raw,
        {{ sacct_field('ElapsedRaw') }} as elapsed_seconds_raw,
        {{ sacct_field('AllocTRES') }} as alloc_tres,
        {{ sacct_field('NodeList') }} as node_list,
        {{ sacct_field('State') }} as state_raw,
        {{ sacct_field('WorkDir') }} as work_dir,
        {{ sacct_field('SubmitLine') }} as submit_line,
        {{ sacct_field('Comment') }} as job_comment,
        -- the cluster is the dump's Cluster column, else the folder under scheduler/slurm/
        regexp_extract(filename, '/scheduler/slurm/([^/]+)/', 1) as cluster_folder
    from source

),

parsed as (

    select
        *,
        -- JobID: <job>[_<array task>|_[<pending range>]][+<het component>][.<step>]
        {{ regexp_groups('job_id_text', job_id_pattern, ['job', 'array', 'array_task', 'het', 'dot', 'step']) }}
            as job_parts,
        {{ regexp_groups('elapsed_raw', elapsed_pattern, ['x', 'd', 'h', 'm', 's']) }} as elapsed_parts,
        {{ sacct_timestamp('submit_raw') }} as submitted_at,
        {{ sacct_timestamp('start_raw') }} as started_at,
        {{ sacct_timestamp('end_raw') }} as ended_at,
        {{ sacct_tres('alloc_tres', 'cpu') }} as cpu_count,
        {{ sacct_tres('alloc_tres', 'node') }} as node_count,
        {{ sacct_tres('alloc_tres', 'billing') }} as billing_units,
        -- gres/gpu=N, else the sum of the typed counts (gres/gpu:a100=4 or MIG gres/gpu:1g.10gb=1)
        coalesce(
            {{ sacct_tres('alloc_tres', 'gres/gpu') }},
            {{ list_total(list_map(
                "regexp_extract_all(alloc_tres, '(^|,)gres/gpu:[^=,]+=([0-9]+)', 2)", 'n', 'cast(n as bigint)'
            )) }}
        ) as gpu_count,
        nullif(regexp_extract(alloc_tres, '(^|,)gres/gpu:([^=,]+)=', 2), '') as gpu_model,
        -- mem=256G: Slurm units are powers of 1024
        {{ regexp_groups('alloc_tres', memory_pattern, ['x', 'amount', 'unit']) }} as memory_parts,
        split_part(state_raw, ' ', 1) as job_state
    from fields

),

typed as (

    select
        *,
        nullif(job_parts['job'], '') as base_job_id,
        nullif(job_parts['array_task'], '') as array_task_spec,
        nullif(job_parts['step'], '') as step_id,
        coalesce(
            try_cast(elapsed_seconds_raw as bigint),
            coalesce(try_cast(nullif(elapsed_parts['d'], '') as bigint), 0) * 86400
            + try_cast(elapsed_parts['h'] as bigint) * 3600
            + try_cast(elapsed_parts['m'] as bigint) * 60
            + try_cast(elapsed_parts['s'] as bigint)
        ) as elapsed_seconds,
        cast(
            try_cast(nullif(memory_parts['amount'], '') as decimal(38, 6))
            * case memory_parts['unit']
                when 'K' then 1024
                when 'M' then 1048576
                when '' then 1048576
                when 'G' then 1073741824
                when 'T' then 1099511627776
                when 'P' then 1125899906842624
            end
            as bigint
        ) as memory_bytes
    from parsed

),

final as (

    select
        -- ids
        -- (a record without a JobID, or a file that could not be read, is keyed by its file row)
        coalesce(cluster_field, nullif(cluster_folder, ''), 'default') || '/'
        || coalesce(
            regexp_replace(job_id_text, '\..*$', ''),
            'unreadable-' || {{ dbt.hash('source_file') }} || '-' || coalesce(cast(source_row_number as string), '0')
        ) as allocation_id,
        coalesce(cluster_field, nullif(cluster_folder, ''), 'default') as cluster_id,
        job_id_text,
        job_id_raw,
        base_job_id,
        case when {{ regexp_search() }}(array_task_spec, '^[0-9]+$') then array_task_spec end as array_task_id,
        step_id,

        -- strings
        case
            when step_id is null then 'allocation'
            when step_id in ('batch', 'extern', 'interactive') then step_id
            else 'step'
        end as record_kind,
        job_name,
        user_name,
        account,
        partition_name,
        job_state,
        state_raw,
        alloc_tres,
        node_list,
        gpu_model,
        work_dir,
        submit_line,
        job_comment,

        -- numerics
        gpu_count,
        cpu_count,
        memory_bytes,
        node_count,
        billing_units,
        elapsed_seconds,

        -- booleans
        step_id is null as is_allocation,

        -- timestamps (UTC)
        submitted_at,
        started_at,
        ended_at,

        -- why this record cannot be used (null when it can)
        case
            when file_quarantine_reason is not null then file_quarantine_reason
            when field_count <> header_count
                then 'field_count_mismatch: ' || field_count || ' fields under a header of ' || header_count
            when job_id_text is null then 'missing JobID'
            when base_job_id = '' or base_job_id is null then 'unparseable JobID: ' || job_id_text
            when start_raw is not null and start_raw not in ('Unknown', 'None') and started_at is null
                then 'unparseable Start: ' || start_raw
            when end_raw is not null and end_raw not in ('Unknown', 'None') and ended_at is null
                then 'unparseable End: ' || end_raw
            when ended_at < started_at then 'End before Start'
        end as quarantine_reason,
        raw_line,
        source_file,
        source_row_number
    from typed

)

select * from final
