-- One row per Slurm job allocation and node it held, from the allocation's NodeList in hostlist syntax
-- (gpu[01-04,07],cpu05 -> gpu01, gpu02, gpu03, gpu04, gpu07, cpu05; zero padding kept). Only allocations
-- count here (not .batch / .extern / numbered steps, which repeat the same resources); an allocation that
-- never started (pending, `None assigned`) holds no node. GPUs are spread evenly over the allocation's nodes,
-- as Slurm's per-node gres is uniform for a job's nodes unless --gpus-per-node differs (not in sacct).
{%- set host_number -%}
    host_prefix
                        -- zero padding as written (gpu[01-10]); lpad alone would cut cpu[9-11]'s 10 to 1
                        || lpad(
                            cast(n as string),
                            cast(greatest(length(split_part(host_range, '-', 1)), length(cast(n as string))) as integer),
                            '0'
                        )
                        || host_suffix
{%- endset %}
with

records as (

    select * from {{ ref('stg_slurm__job_records') }}
    where
        is_allocation
        and quarantine_reason is null
        and started_at is not null
        and node_list is not null
        and node_list <> 'None assigned'

),

host_groups as (

    -- gpu[01-04,07],cpu05 -> 'gpu[01-04,07]', 'cpu05'
    select
        allocation_id,
        {{ unnest_as("regexp_extract_all(node_list, '[^,\\[]+(\\[[^\\]]*\\])?[^,\\[]*', 0)", 'host_group') }}
    from records

),

host_ranges as (

    select
        allocation_id,
        host_group,
        regexp_extract(host_group, '^([^\[]*)', 1) as host_prefix,
        regexp_extract(host_group, '\](.*)$', 1) as host_suffix,
        {{ unnest_as(
            "case when contains(host_group, '[') then "
            ~ split_on("regexp_extract(host_group, '\\[([^\\]]*)\\]', 1)", ',')
            ~ " else " ~ array_of(['null']) ~ " end",
            'host_range'
        ) }}
    from host_groups

),

host_lists as (

    select
        allocation_id,
        case
            when host_range is null then {{ array_of(['host_group']) }}
            else {{ list_map(
                int_range(
                    "cast(split_part(host_range, '-', 1) as bigint)",
                    "cast(coalesce(nullif(split_part(host_range, '-', 2), ''), split_part(host_range, '-', 1)) as bigint) + 1",
                    1
                ),
                'n',
                host_number
            ) }}
        end as node_names
    from host_ranges

),

hosts as (

    select
        allocation_id,
        {{ unnest_as('node_names', 'node_name') }}
    from host_lists

),

node_counts as (

    select
        allocation_id,
        count(distinct node_name) as allocation_node_count
    from hosts
    group by 1

),

final as (

    select distinct
        records.allocation_id,
        -- the workload, shaped like a pod's <cluster>/<namespace>/<name>: <cluster>/slurm/<JobID>
        records.cluster_id || '/slurm/' || records.job_id_text as workload_id,
        records.cluster_id || '/' || hosts.node_name as node_id,
        records.cluster_id,
        hosts.node_name,
        records.job_id_text,
        records.job_id_raw,
        records.job_name,
        records.user_name,
        records.account,
        records.partition_name,
        records.job_state,
        records.gpu_model,
        {{ double_quotient('cast(records.gpu_count as decimal(18, 6))', 'node_counts.allocation_node_count') }}
            as gpus_on_node,
        {{ double_quotient('cast(records.cpu_count as decimal(18, 6))', 'node_counts.allocation_node_count') }}
            as cpus_on_node,
        {{ double_quotient('cast(records.memory_bytes as decimal(38, 6))', 'node_counts.allocation_node_count') }}
            as memory_bytes_on_node,
        node_counts.allocation_node_count,
        records.started_at,
        -- a running job has no End yet: it holds its nodes for the Elapsed so far
        coalesce(
            records.ended_at,
            {{ add_seconds('records.started_at', 'coalesce(records.elapsed_seconds, 0)') }}
        ) as held_until_at,
        records.ended_at
    from records
    inner join hosts on records.allocation_id = hosts.allocation_id
    inner join node_counts on records.allocation_id = node_counts.allocation_id

)

select * from final
