-- One row per pod incarnation and container from the Kubernetes API pod specs (base_kube__pod_specs): how the
-- container was launched (command and args as one line, working directory) and the volume claims the pod
-- mounts. A pod appears in every daily snapshot it was alive in; its spec does not change, so one row each.
-- Who created the workload, where an admission webhook stamps it (var gpucost_pod_annotation_creator, from
-- the AdmissionReview's userInfo.username on the owner's create, copied to its pod template): creator_username
-- as stamped, and creator_user_id, the person it names (an OIDC name alice@acme.example or oidc:alice gives
-- alice, the form of the user label), null for a service account (system:serviceaccount:<ns>:<name>) or
-- another system identity, which names nobody. Clusters without the webhook give null.
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
        nullif(trim(source.annotations['{{ var("gpucost_pod_annotation_creator") }}']), '') as creator_username,
        {{ unnest_as('source.containers', 'container_spec') }},
        -- claim names, sorted; volumes that are not claims give null, which the join to text skips
        {{ list_text(list_sorted(list_map(
            'source.volumes', 'volume',
            'volume.' ~ adapter.quote('persistentVolumeClaim') ~ '.' ~ adapter.quote('claimName')
        )), "' '") }} as volume_claims
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
        min(nullif({{ list_text(list_join(
            'coalesce(containers.container_spec.command, ' ~ array_of([]) ~ ')',
            'coalesce(containers.container_spec.args, ' ~ array_of([]) ~ ')'
        ), "' '") }}, '')) as command_line,
        min(containers.container_spec.{{ adapter.quote('workingDir') }}) as working_dir,
        min(nullif(containers.volume_claims, '')) as volume_claims,
        min(containers.creator_username) as creator_username,
        min(
            case
                when containers.creator_username not like 'system:%'
                    then nullif(lower(regexp_extract(containers.creator_username, '([^:@]+)(@[^@]*)?$', 1)), '')
            end
        ) as creator_user_id
    from containers
    group by 1, 2, 3, 4, 5, 6

)

select * from final
