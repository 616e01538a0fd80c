-- One row per pod incarnation and container: the image it ran (kube_pod_container_info).
with

source as (

    select * from {{ ref('base_kube__series') }}
    where metric_name = 'kube_pod_container_info' and sample_count > 0

),

containers as (

    select
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('uid') }} as uid,
        {{ prom_label('container') }} as container,
        {{ arg_max_of(prom_label('image'), 'last_sampled_epoch') }} as image,
        {{ arg_max_of(prom_label('image_id'), 'last_sampled_epoch') }} as image_id,
        min(first_sampled_epoch) as first_seen_epoch,
        max(last_sampled_epoch) as last_seen_epoch
    from source
    group by 1, 2, 3, 4, 5

),

final as (

    select
        {{ workload_id('cluster_id', 'namespace', 'pod', 'uid') }} as workload_id,
        cluster_id,
        namespace,
        pod,
        uid,
        container,
        image,
        -- registry/repository without tag or digest: nvcr.io/nvidia/pytorch:24.05-py3 -> nvcr.io/nvidia/pytorch
        regexp_replace(regexp_replace(image, '@.*$', ''), ':[^:/]*$', '') as image_repository,
        image_id,
        first_seen_epoch,
        last_seen_epoch
    from containers
    where pod is not null

)

select * from final
