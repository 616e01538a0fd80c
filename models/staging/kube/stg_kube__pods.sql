-- One row per pod incarnation (name and uid) from kube_pod_info: where and when it ran.
with

source as (

    select * from {{ ref('base_kube__samples') }}
    where metric_name = 'kube_pod_info'

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
        min(sampled_epoch) as first_seen_epoch,
        max(sampled_epoch) as last_seen_epoch
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
        last_seen_epoch
    from pods
    where pod is not null

)

select * from final
