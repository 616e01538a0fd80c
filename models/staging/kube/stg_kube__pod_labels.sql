-- One row per pod (name and uid): its ownership labels (label keys are dbt vars), as last seen. The build warns
-- when kube_pod_labels carries no label_* key (kube-state-metrics without --metric-labels-allowlist).
{%- do warn_kube_pod_labels_without_allowlist() %}
with

source as (

    select * from {{ ref('base_kube__series') }}
    where metric_name = 'kube_pod_labels' and sample_count > 0

),

latest as (

    select
        cluster_id,
        {{ prom_label('namespace') }} as namespace,
        {{ prom_label('pod') }} as pod,
        {{ prom_label('uid') }} as uid,
        {{ arg_max_of('labels', 'last_sampled_epoch') }} as labels
    from source
    group by 1, 2, 3, 4

),

final as (

    select
        {{ workload_id('cluster_id', 'namespace', 'pod', 'uid') }} as workload_id,
        cluster_id,
        namespace,
        pod,
        uid,
        {{ prom_label(var('gpucost_pod_label_project')) }} as label_project_id,
        {{ prom_label(var('gpucost_pod_label_team')) }} as label_team_id,
        {{ prom_label(var('gpucost_pod_label_user')) }} as label_user_id,
        {{ prom_label('label_app') }} as label_app,
        {{ prom_label(var('gpucost_pod_label_workload_class')) }} as label_workload_class
    from latest
    where pod is not null

)

select * from final
