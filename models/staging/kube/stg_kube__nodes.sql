-- One row per node and cluster: the cloud instance behind it (from kube_node_info's provider_id).
with

source as (

    select * from {{ ref('base_kube__series') }}
    where metric_name = 'kube_node_info' and sample_count > 0

),

nodes as (

    select
        cluster_id,
        {{ prom_label('node') }} as node_name,
        max({{ prom_label('provider_id') }}) as provider_id,
        max({{ prom_label('internal_ip') }}) as internal_ip,
        min(first_sampled_epoch) as first_seen_epoch,
        max(last_sampled_epoch) as last_seen_epoch
    from source
    group by 1, 2

),

final as (

    select
        cluster_id || '/' || node_name as node_id,
        cluster_id,
        node_name,
        provider_id,
        -- aws:///us-east-1a/i-0abc -> i-0abc ; gce://project/zone/name -> name ; azure:///subscriptions/.../vm -> vm
        nullif(regexp_extract(provider_id, '([^/]+)$', 1), '') as instance_id,
        internal_ip,
        first_seen_epoch,
        last_seen_epoch
    from nodes
    where node_name is not null

)

select * from final
