-- Pod specs from the Kubernetes API, landed as `kubectl get pods --all-namespaces -o json` snapshots (a v1
-- List of Pods) under <landing>/inventory/kube/<cluster>/: one row per pod object per snapshot, with the
-- fields kube-state-metrics does not export (container command, args, workingDir; mounted volume claims;
-- annotations, e.g. the creator an admission webhook stamps).
-- No file (the source is optional) gives an empty table with the same columns.
{%- set files = landing_files('inventory/kube/**/*.json') + landing_files('inventory/kube/**/*.json.gz') %}
{%- set types = kube_pod_spec_types() %}
{%- if files %}
with

snapshots as (

    {{ read_kube_pod_lists(files) }}

)

select
    filename,
    nullif(regexp_extract(replace(filename, '\\', '/'), 'inventory/kube/([^/]+)/', 1), '') as cluster_id,
    pod_object.metadata.namespace as namespace,
    pod_object.metadata.name as pod,
    pod_object.metadata.uid as uid,
    pod_object.metadata.annotations as annotations,
    pod_object.spec.containers as containers,
    pod_object.spec.volumes as volumes
from snapshots
{%- else %}
    select
        cast(null as string) as filename,
        cast(null as string) as cluster_id,
        cast(null as string) as namespace,
        cast(null as string) as pod,
        cast(null as string) as uid,
        cast(null as {{ types.annotations }}) as annotations,
        cast(null as {{ types.containers }}) as containers,
        cast(null as {{ types.volumes }}) as volumes
    where false
{%- endif %}
