-- One row per workload (pod incarnation or Slurm job) with its class for task-complexity weights
-- (seed workload_complexity_weights): the pod's workload-class label when it names a known class, else
-- inferred from what created it and its names (first match wins), else `other`. class_source says which.
with

pods as (

    select * from {{ ref('stg_kube__pods') }}

),

pod_labels as (

    select * from {{ ref('stg_kube__pod_labels') }}

),

slurm_jobs as (

    select
        workload_id,
        min(cluster_id) as cluster_id,
        min(job_name) as job_name,
        min(partition_name) as partition_name
    from {{ ref('int_slurm_allocation_nodes') }}
    group by 1

),

weights as (

    select * from {{ ref('workload_complexity_weights') }}

),

workloads as (

    select
        pods.workload_id,
        lower(pod_labels.label_workload_class) as labelled_class,
        lower(concat_ws(' ', pods.created_by_kind, pods.created_by_name, pods.pod, pod_labels.label_app))
            as hint_text,
        lower(coalesce(pods.created_by_kind, '')) as created_by_kind
    from pods
    left join pod_labels on pods.workload_id = pod_labels.workload_id
    union all
    select
        workload_id,
        cast(null as string) as labelled_class,
        lower(concat_ws(' ', 'slurm', partition_name, job_name)) as hint_text,
        'slurm' as created_by_kind
    from slurm_jobs

),

inferred as (

    select
        workload_id,
        labelled_class,
        case
            when {{ regexp_search() }}(hint_text, '(^|[^a-z])(hpo|sweep|tune|tuning|katib|optuna|trial)([^a-z]|$)')
                or created_by_kind in ('experiment', 'trial') then 'hyperparameter_tuning'
            when {{ regexp_search() }}(hint_text, '(^|[^a-z])(ft|finetune|fine-tune|lora|sft)([^a-z]|$)')
                then 'finetune'
            when {{ regexp_search() }}(hint_text, '(^|[^a-z])(eval|evaluation|benchmark)([^a-z]|$)') then 'eval'
            when {{ regexp_search() }}(hint_text, 'jupyter|notebook') then 'notebook'
            when created_by_kind in ('pytorchjob', 'mpijob', 'tfjob', 'xgboostjob', 'paddlejob', 'jaxjob')
                or {{ regexp_search() }}(hint_text, '(^|[^a-z])(train|training|pretrain)([^a-z]|$)') then 'training'
            when created_by_kind in ('replicaset', 'deployment', 'inferenceservice')
                or {{ regexp_search() }}(hint_text, 'serve|server|infer|vllm|triton') then 'inference'
            when created_by_kind = 'slurm' then 'training'
        end as inferred_class
    from workloads

),

final as (

    select
        inferred.workload_id,
        case
            when labelled_weight.workload_class is not null then inferred.labelled_class
            else coalesce(inferred.inferred_class, 'other')
        end as workload_class,
        case
            when labelled_weight.workload_class is not null then 'label'
            when inferred.inferred_class is not null then 'inferred'
            else 'default'
        end as class_source,
        coalesce(
            labelled_weight.complexity_weight, inferred_weight.complexity_weight, other_weight.complexity_weight, 1
        ) as complexity_weight
    from inferred
    left join weights as labelled_weight on inferred.labelled_class = labelled_weight.workload_class
    left join weights as inferred_weight on inferred.inferred_class = inferred_weight.workload_class
    left join weights as other_weight on other_weight.workload_class = 'other'
    qualify row_number() over (partition by inferred.workload_id order by inferred.labelled_class nulls last) = 1

)

select * from final
