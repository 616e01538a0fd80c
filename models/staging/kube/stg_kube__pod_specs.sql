-- One row per pod incarnation and container from the Kubernetes API pod specs (base_kube__pod_specs): how the
-- container was launched (command and args as one line, working directory) and the volume claims the pod
-- mounts. A pod appears in every daily snapshot it was alive in; its spec does not change, so one row each.
with

source as (

    select * from {{ ref('base_kube__pod_specs') }}
    where pod is not null

),

containers as (

    select
        source.cluster_id,
        source.namespace,
        source.pod,
        source.uid,
        unnest(source.containers) as container_spec,
        -- claim names, sorted; volumes that are not claims give null, which array_to_string skips
        array_to_string(
            list_sort(list_transform(source.volumes, lambda volume: volume."persistentVolumeClaim"."claimName")),
            ' '
        ) as volume_claims
    from source

),

final as (

    select
        {{ workload_id('containers.cluster_id', 'containers.namespace', 'containers.pod', 'containers.uid') }}
            as workload_id,
        containers.cluster_id,
        containers.namespace,
        containers.pod,
        containers.uid,
        containers.container_spec.name as container,
        min(containers.container_spec.image) as image,
        min(nullif(array_to_string(
            list_concat(
                coalesce(containers.container_spec.command, []), coalesce(containers.container_spec.args, [])
            ),
            ' '
        ), '')) as command_line,
        min(containers.container_spec."workingDir") as working_dir,
        min(nullif(containers.volume_claims, '')) as volume_claims
    from containers
    group by 1, 2, 3, 4, 5, 6

)

select * from final
