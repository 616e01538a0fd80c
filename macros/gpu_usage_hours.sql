{#- int_gpu_usage_hourly's rows for the hours [since, until) (epoch seconds of hours; until none: every hour
    from since on). int_gpu_usage_hourly builds its hours a chunk at a time (usage_hour_chunks): every hour's rows
    come from one chunk, and a chunk reads only the samples, intervals and Slurm hours of its own hours, so the
    rows of a chunked build are those of one pass over every hour. -#}
{% macro gpu_usage_hours(since, until=none) -%}
{#- hourly aggregates (gpucost collect --resolution hourly): one row per series and hour, stamped at the hour's
    start, with the seconds the series was scraped in it (covered_seconds). A series' tenancy weighs by those
    seconds, and a slot's hour lasts its series' seconds, at most the hour: tenants that follow each other
    keep their own seconds, tenants side by side (more seconds than the hour) share it. -#}
{%- set hourly = is_hourly_landing() %}

with

dcgm_samples as (

    -- stg_dcgm__gpu_samples of the hours [since, until), without unnesting the series outside them
    -- depends_on: {{ ref('stg_dcgm__gpu_samples') }}
    select * from ({{ dcgm_gpu_samples(ref('base_dcgm__series'), since if since else none, until) }}) as samples

),

pods as (

    select * from {{ ref('stg_kube__pods') }}

),

gpu_slot_intervals as (

    select * from {{ ref('int_telemetry_sample_intervals') }}
    where series_kind = 'gpu_slot' and {{ epoch_within('sampled_epoch', since, until) }}

),

request_intervals as (

    -- a pod's GPU requests on its node, each sample with its duration (every pod's, Slurm jobs come below)
    select * from {{ ref('int_telemetry_sample_intervals') }}
    where series_kind = 'gpu_request' and {{ epoch_within('sampled_epoch', since, until) }}

),

slurm_allocation_nodes as (

    select * from {{ ref('int_slurm_allocation_nodes') }}

),

slurm_requests as (

    select * from {{ ref('int_slurm_usage_hourly') }}
    where {{ epoch_within('hour_start_epoch', since, until) }}

),

node_models as (

    -- the GPU model of each node, to price MIG requests by the same share as the instances' samples: from every
    -- series with samples (not only those of these hours: a node's requests in hours its GPUs were not sampled)
    select
        cluster_id,
        node_name,
        max(gpu_model) as gpu_model
    from {{ ref('base_dcgm__series') }}
    where sample_count > 0
    group by 1, 2

),

-- The exporter names the pod, not its uid: the incarnation alive at the sample's time is the workload (the
-- latest started when two overlap). Matched once per pod and time, not per GPU series.
sample_pod_times as (

    select distinct
        pod_key,
        sampled_epoch
    from dcgm_samples
    where pod_key is not null

),

pod_time_candidates as (

    select
        sample_pod_times.pod_key,
        sample_pod_times.sampled_epoch,
        pods.workload_id as matched_workload_id,
        row_number() over (
            partition by sample_pod_times.pod_key, sample_pod_times.sampled_epoch
            order by pods.first_seen_epoch desc, pods.workload_id desc
        ) as match_rank
    from sample_pod_times
    inner join pods
        on
        sample_pod_times.pod_key = pods.pod_key
        and sample_pod_times.sampled_epoch >= pods.first_seen_epoch
        and sample_pod_times.sampled_epoch <= pods.last_seen_epoch + {{ var('gpucost_max_sample_gap_seconds') }}

),

pod_time_matches as (

    select
        pod_key,
        sampled_epoch,
        matched_workload_id
    from pod_time_candidates
    where match_rank = 1

),

pod_samples as (

    select
        dcgm_samples.*,
        coalesce(pod_time_matches.matched_workload_id, dcgm_samples.pod_key) as workload_id
    from dcgm_samples
    left join pod_time_matches
        on
        dcgm_samples.pod_key = pod_time_matches.pod_key
        and dcgm_samples.sampled_epoch = pod_time_matches.sampled_epoch

),

slurm_matches as (

    -- a sample without a pod: the Slurm allocation(s) holding the node then (the one named by hpc_job if any)
    select
        {{ column_list(ref('stg_dcgm__gpu_samples'), 'pod_samples') }},
        slurm_allocation_nodes.workload_id,
        slurm_allocation_nodes.gpus_on_node {{- ' * pod_samples.covered_seconds' if hourly }} as tenant_weight
    from pod_samples
    inner join slurm_allocation_nodes
        on
        pod_samples.cluster_id = slurm_allocation_nodes.cluster_id
        and pod_samples.node_name = slurm_allocation_nodes.node_name
        -- an hourly aggregate overlaps the allocation within its hour
        and pod_samples.sampled_epoch {{- ' + 3599' if hourly }}
        >= {{ epoch_seconds('slurm_allocation_nodes.started_at') }}
        and pod_samples.sampled_epoch < {{ epoch_seconds('slurm_allocation_nodes.held_until_at') }}
        and (
            pod_samples.hpc_job is null
            or pod_samples.hpc_job in (slurm_allocation_nodes.job_id_raw, slurm_allocation_nodes.job_id_text)
        )
    where pod_samples.pod is null

),

tenants as (

    select
        *,
        {{ 'coalesce(covered_seconds, 1.0)' if hourly else '1.0' }} as tenant_weight
    from pod_samples
    where
        pod is not null
        or not exists (
            select 1 from slurm_matches
            where
                slurm_matches.cluster_id = pod_samples.cluster_id
                and slurm_matches.gpu_uuid = pod_samples.gpu_uuid
                and slurm_matches.gpu_instance_id is not distinct from pod_samples.gpu_instance_id
                and slurm_matches.sampled_epoch = pod_samples.sampled_epoch
        )
    -- same columns in the same order (the sample's, workload_id, tenant_weight): positional, portable
    union all
    select * from slurm_matches

),

slot_samples as (

    -- each GPU slot's sample (gpu_slot_id numbers cluster, node, GPU and MIG instance): its tenants' weights
    select
        gpu_slot_id,
        sampled_epoch,
        sum(tenant_weight) as slot_weight,
        sum(busy_ratio * tenant_weight) as slot_busy_weight
    from tenants
    group by 1, 2

),

gpu_samples as (

    -- each tenant's part of its slot's sample: even (by tenant weight) or by measured busy share
    select
        tenants.*,
        case
            when '{{ var("gpucost_shared_gpu_split") }}' = 'used' and slot_samples.slot_busy_weight > 0
                then tenants.busy_ratio * tenants.tenant_weight / slot_samples.slot_busy_weight
            else tenants.tenant_weight / slot_samples.slot_weight
        end as tenant_share,
        -- the busy part of the tenant's share: a pod's own series under the `used` split measures that pod
        -- (at most its share); otherwise the series is the whole slot's, shared like its time
        case
            when '{{ var("gpucost_shared_gpu_split") }}' = 'used' and tenants.pod is not null
                then least(
                        tenants.busy_ratio,
                        tenants.busy_ratio * tenants.tenant_weight / nullif(slot_samples.slot_busy_weight, 0)
                    )
            else tenants.busy_ratio * tenants.tenant_weight / slot_samples.slot_weight
        end as used_share
    from tenants
    inner join slot_samples
        on tenants.gpu_slot_id = slot_samples.gpu_slot_id
        and tenants.sampled_epoch = slot_samples.sampled_epoch

),

-- sqlfluff's templater renders both branches of the if below into one layout:
-- noqa: disable=LT02
gpu_durations as (
    {%- if hourly %}

    -- a slot's hour lasts the seconds its series were scraped in it, at most the hour
    select
        gpu_slot_id,
        sampled_epoch,
        least(3600, sum(covered_seconds)) as duration_seconds
    from dcgm_samples
    group by 1, 2
    {%- else %}

    select
        gpu_slot_id,
        sampled_epoch,
        duration_seconds
    from gpu_slot_intervals
    {%- endif %}

),
-- noqa: enable=LT02

gpu_hourly as (

    select
        gpu_samples.cluster_id,
        gpu_samples.node_name,
        {{ epoch_hour_floor('gpu_samples.sampled_epoch') }} as hour_start_epoch,
        gpu_samples.workload_id,
        count(distinct gpu_samples.gpu_uuid) as gpu_count,
        -- integer milliseconds per sample first, then summed: the same total whatever the summing order
        sum(cast(round(
            gpu_durations.duration_seconds * 1000 * gpu_samples.gpu_share * gpu_samples.tenant_share
        ) as bigint)) as gpu_ms,
        sum(cast(round(
            gpu_durations.duration_seconds * 1000 * gpu_samples.gpu_share * coalesce(gpu_samples.used_share, 0)
        ) as bigint)) as used_gpu_ms
    from gpu_samples
    inner join gpu_durations
        on gpu_samples.gpu_slot_id = gpu_durations.gpu_slot_id
        and gpu_samples.sampled_epoch = gpu_durations.sampled_epoch
    group by 1, 2, 3, 4

),

requests_hourly as (

    select
        request_intervals.cluster_id,
        request_intervals.node_name,
        {{ epoch_hour_floor('request_intervals.sampled_epoch') }} as hour_start_epoch,
        request_intervals.workload_id,
        sum(cast(round(
            request_intervals.requested_amount
            * {{ mig_share('request_intervals.mig_profile', 'node_models.gpu_model') }} * 1000
            * request_intervals.duration_seconds
        ) as bigint)) as requested_gpu_ms,
        -- a time-sliced replica (nvidia.com/gpu.shared) asks for one replica, not one GPU
        bool_or({{ regexp_search() }}(request_intervals.resource, 'gpu[._]shared$')) as is_time_sliced
    from request_intervals
    -- node_models is read by mig_share under gpucost_mig_share: memory
    left join node_models  -- noqa: ST11
        on request_intervals.cluster_id = node_models.cluster_id
        and request_intervals.node_name = node_models.node_name
    where request_intervals.requested_amount > 0
    group by 1, 2, 3, 4
    union all
    select
        cluster_id,
        node_name,
        hour_start_epoch,
        workload_id,
        requested_gpu_ms,
        false as is_time_sliced
    from slurm_requests

),

joined as (

    select
        coalesce(gpu_hourly.cluster_id, requests_hourly.cluster_id) as cluster_id,
        coalesce(gpu_hourly.node_name, requests_hourly.node_name) as node_name,
        coalesce(gpu_hourly.hour_start_epoch, requests_hourly.hour_start_epoch) as hour_start_epoch,
        coalesce(gpu_hourly.workload_id, requests_hourly.workload_id) as workload_id,
        coalesce(gpu_hourly.gpu_count, 0) as gpu_count,
        cast(coalesce(gpu_hourly.gpu_ms, 0) as bigint) as gpu_ms,
        cast(coalesce(gpu_hourly.used_gpu_ms, 0) as bigint) as used_gpu_ms,
        -- a time-sliced replica requests its share of the GPU's time: what the slot gave it (1/replicas)
        cast(case
            when requests_hourly.is_time_sliced
                then least(coalesce(requests_hourly.requested_gpu_ms, 0), coalesce(gpu_hourly.gpu_ms, 0))
            else coalesce(requests_hourly.requested_gpu_ms, 0)
        end as bigint) as requested_gpu_ms
    from gpu_hourly
    full outer join requests_hourly
        on gpu_hourly.cluster_id = requests_hourly.cluster_id
        and gpu_hourly.node_name = requests_hourly.node_name
        and gpu_hourly.hour_start_epoch = requests_hourly.hour_start_epoch
        and gpu_hourly.workload_id = requests_hourly.workload_id

),

final as (

    select
        md5(
            cluster_id || '|' || node_name || '|' || cast(hour_start_epoch as string)
            || '|' || coalesce(workload_id, '')
        ) as usage_hour_key,
        *,
        {{ telemetry_loaded_through() }} as inputs_loaded_at
    from joined

)

select * from final
{%- endmacro %}

{#- `expr >= since and expr < until` (until none: no upper bound; both none: true). -#}
{% macro epoch_within(expr, since, until=none) -%}
    {%- set conditions = [] -%}
    {%- if since is not none %}{% do conditions.append(expr ~ ' >= ' ~ since) %}{% endif -%}
    {%- if until is not none %}{% do conditions.append(expr ~ ' < ' ~ until) %}{% endif -%}
    {{ conditions | join(' and ') if conditions else 'true' }}
{%- endmacro %}
