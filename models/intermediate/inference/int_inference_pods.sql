-- The serving pods: every pod that exported a serving engine's counter (stg_serving__counter_increases),
-- one row per pod incarnation known to kube-state-metrics (the workload its cost is allocated to), with
-- the deployment it belongs to (the ReplicaSet's name without its pod-template hash), the engine and the
-- model(s) it served, and its declared or attributed owner. A pod whose counters landed without any
-- kube-state-metrics series keeps one row without a workload.
with

counters as (

    select * from {{ ref('stg_serving__counter_increases') }}

),

kube_pods as (

    select * from {{ ref('stg_kube__pods') }}

),

workloads as (

    select * from {{ ref('int_workloads') }}

),

serving_pods as (

    select
        pod_key,
        cluster_id,
        namespace,
        pod,
        min(engine) as engine,
        -- the models a pod served, in name order (one, unless a Triton server loads several)
        string_agg(distinct model_name, ', ' order by model_name) as model_name
    from counters
    group by 1, 2, 3, 4

),

final as (

    select
        serving_pods.pod_key,
        kube_pods.workload_id,
        serving_pods.cluster_id,
        serving_pods.namespace,
        serving_pods.pod,
        case
            when lower(kube_pods.created_by_kind) = 'replicaset'
                then regexp_replace(kube_pods.created_by_name, '-[a-z0-9]+$', '')
            else coalesce(kube_pods.created_by_name, serving_pods.pod)
        end as deployment_name,
        kube_pods.created_by_kind,
        serving_pods.engine,
        serving_pods.model_name,
        coalesce(workloads.team_id, '__unallocated__') as owner_team_id
    from serving_pods
    left join kube_pods on serving_pods.pod_key = kube_pods.pod_key
    left join workloads on kube_pods.workload_id = workloads.workload_id

)

select * from final
