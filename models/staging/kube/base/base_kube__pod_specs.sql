{{ config(materialized='table') }}

-- Pod specs from the Kubernetes API, landed as `kubectl get pods --all-namespaces -o json` snapshots (a v1
-- List of Pods) under <landing>/inventory/kube/<cluster>/: one row per pod object per snapshot, with the
-- fields kube-state-metrics does not export (container command, args, workingDir; mounted volume claims).
-- No file (the source is optional) gives an empty table with the same columns.
{%- set files = landing_files('inventory/kube/**/*.json') + landing_files('inventory/kube/**/*.json.gz') %}
{%- set container_type = 'struct(name varchar, image varchar, command varchar[], args varchar[], '
    ~ 'workingDir varchar)[]' %}
{%- set volume_type = 'struct(name varchar, persistentVolumeClaim struct(claimName varchar))[]' %}
{%- set pod_type = 'struct(metadata struct(name varchar, namespace varchar, uid varchar), spec struct(containers '
    ~ container_type ~ ', volumes ' ~ volume_type ~ '))' %}
{%- if files %}
with

snapshots as (

    select
        filename,
        unnest(items) as pod_object
    from read_json(
        {{ sql_string_list(files) }},
        format = 'auto',
        filename = true,
        maximum_object_size = 268435456,
        columns = {kind: 'varchar', items: '{{ pod_type }}[]'}
    )
    where kind in ('List', 'PodList')

)

select
    filename,
    nullif(regexp_extract(replace(filename, '\\', '/'), 'inventory/kube/([^/]+)/', 1), '') as cluster_id,
    pod_object.metadata.namespace as namespace,
    pod_object.metadata.name as pod,
    pod_object.metadata.uid as uid,
    pod_object.spec.containers as containers,
    pod_object.spec.volumes as volumes
from snapshots
{%- else %}
    select
        cast(null as varchar) as filename,
        cast(null as varchar) as cluster_id,
        cast(null as varchar) as namespace,
        cast(null as varchar) as pod,
        cast(null as varchar) as uid,
        cast(null as {{ container_type }}) as containers,
        cast(null as {{ volume_type }}) as volumes
    where false
{%- endif %}
