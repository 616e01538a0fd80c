-- One row per pod incarnation (name and uid) from kube_pod_info, kube_pod_start_time and
-- kube_pod_completion_time: where and when it ran.
with

source as (

    select * from {{ ref('base_kube__series') }}
    where
        metric_name in ('kube_pod_info', 'kube_pod_start_time', 'kube_pod_completion_time')
        and sample_count > 0

),

pods as (

    select
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('uid') }} as uid,
        max({{ prom_label('node') }}) as node_name,
        max({{ prom_label('created_by_kind') }}) as created_by_kind,
        max({{ prom_label('created_by_name') }}) as created_by_name,
        min(case when metric_name = 'kube_pod_info' then first_sampled_epoch end) as first_seen_epoch,
        max(case when metric_name = 'kube_pod_info' then last_sampled_epoch end) as last_seen_epoch,
        max(case when metric_name = 'kube_pod_start_time' then max_sample_value end)
            as started_epoch,
        max(case when metric_name = 'kube_pod_completion_time' then max_sample_value end)
            as completed_epoch
    from source
    group by 1, 2, 3, 4

),

final as (

    select
        {{ workload_id('cluster_id', 'namespace', 'pod', 'uid') }} as workload_id,
        {{ workload_id('cluster_id', 'namespace', 'pod') }} as pod_key,
        cluster_id,
        namespace,
        pod,
        uid,
        node_name,
        created_by_kind,
        created_by_name,
        first_seen_epoch,
        last_seen_epoch,
        {{ from_epoch_seconds('started_epoch') }} as started_at,
        {{ from_epoch_seconds('completed_epoch') }} as completed_at
    from pods
    where pod is not null and first_seen_epoch is not null

)

select * from final
