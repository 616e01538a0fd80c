{#- Label helpers for Prometheus series read by read_prometheus_series(). -#}

{#- A label's value, null when absent or empty. -#}
{% macro prom_label(name) -%}
    nullif(labels['{{ name }}'], '')
{%- endmacro %}

{#- The cluster: the series' `cluster` label (Prometheus external label), else the folder under metrics/<source>/. -#}
{% macro prom_cluster(source_dir) -%}
    coalesce(
        {{ prom_label('cluster') }},
        nullif(regexp_extract(replace(filename, '\\', '/'), '{{ source_dir }}/([^/]+)/', 1), '')
    )
{%- endmacro %}

{#- A pod's key: <cluster>/<namespace>/<pod>. Pod names repeat over time (jupyter-alice-0), so a workload
    is the pod key plus the pod's uid when known: <cluster>/<namespace>/<pod>/<uid>. -#}
{% macro workload_id(cluster, namespace, pod, uid=none) -%}
    case when {{ pod }} is not null then {{ cluster }} || '/' || coalesce({{ namespace }}, '') || '/' || {{ pod }}
    {%- if uid is not none %} || coalesce('/' || {{ uid }}, ''){% endif %} end
{%- endmacro %}

{#- A GPU slot's number: a GPU, or one MIG instance of it, on its node and cluster. The first 60 bits (15 hex
    digits) of the md5 of the four labels as a JSON list (null and empty apart), the same on every engine and in
    every build: the incremental int_telemetry_sample_intervals keeps rows of earlier builds. The data test
    assert_gpu_slot_ids_name_one_slot fails the build should two slots ever share a number. -#}
{% macro gpu_slot_id(cluster, node, gpu_uuid, gpu_instance) -%}
    {{ return(adapter.dispatch('gpu_slot_id', 'gpucost')(cluster, node, gpu_uuid, gpu_instance)) }}
{%- endmacro %}

{% macro default__gpu_slot_id(cluster, node, gpu_uuid, gpu_instance) -%}
    cast(('0x' || substr(md5(to_json([{{ cluster }}, {{ node }}, {{ gpu_uuid }}, {{ gpu_instance }}])), 1, 15)) as bigint)
{%- endmacro %}

{% macro spark__gpu_slot_id(cluster, node, gpu_uuid, gpu_instance) -%}
    cast(conv(substr(md5(to_json(array({{ cluster }}, {{ node }}, {{ gpu_uuid }}, {{ gpu_instance }}))), 1, 15), 16, 10)
        as bigint)
{%- endmacro %}

{#- A number for a group of DCGM series with the same labels (stg_dcgm__gpu_samples' pivot key, never stored):
    DuckDB's hash of the label columns, without the sort a dense_rank needs. The data test
    assert_dcgm_series_groups_hash_apart fails the build should two groups ever share one. Spark: a dense_rank
    (its hashes skip null columns, so two groups could share one more easily). -#}
{#- The labels that make a group of DCGM series (stg_dcgm__gpu_samples' pivot key, series_group_id). -#}
{% macro dcgm_series_group_labels() -%}
    {{ return([
        'cluster_id', 'node_name', 'gpu_uuid', 'gpu_index', 'gpu_model', 'namespace', 'pod', 'container', 'pod_uid',
        'gpu_instance_id', 'gpu_instance_profile', 'hpc_job',
    ]) }}
{%- endmacro %}

{% macro series_group_id(columns) -%}
    {{ return(adapter.dispatch('series_group_id', 'gpucost')(columns)) }}
{%- endmacro %}

{% macro default__series_group_id(columns) -%}
    hash({{ columns | join(', ') }})
{%- endmacro %}

{% macro spark__series_group_id(columns) -%}
    dense_rank() over (order by {{ columns | join(', ') }})
{%- endmacro %}

{#- Seconds one sample stands for: the gap to the series' next sample, or the series' step when the
    gap is missing (last sample) or longer than gpucost_max_sample_gap_seconds (telemetry was lost); an
    hour in a landing zone of hourly aggregates (is_hourly_landing). -#}
{% macro sample_duration(gap_seconds, step_seconds) -%}
    {%- if is_hourly_landing() -%}
    {#- an hourly aggregate stands for its hour (requests: the hour's mean, absent time counting zero) -#}
    3600
    {%- else -%}
    case
        when {{ gap_seconds }} is null or {{ gap_seconds }} > {{ var('gpucost_max_sample_gap_seconds') }}
            then least(coalesce({{ step_seconds }}, 60), {{ var('gpucost_max_sample_gap_seconds') }})
        else {{ gap_seconds }}
    end
    {%- endif -%}
{%- endmacro %}

{#- The part of a physical GPU a MIG instance profile stands for ('3g.40gb' -> 3/7 of compute by default, or
    40 GB out of the model's memory under var gpucost_mig_share: memory); 1 when there is no profile. -#}
{% macro mig_share(profile, model) -%}
    {%- set slices = var('gpucost_mig_compute_slices') -%}
    case
        when {{ profile }} is null then 1.0
        {%- if var('gpucost_mig_share') == 'memory' %}
        when try_cast(regexp_extract({{ profile }}, '\.([0-9]+)gb', 1) as double) > 0
            and try_cast(regexp_extract({{ model }}, '([0-9]+) ?GB', 1) as double) > 0
            then least(
                try_cast(regexp_extract({{ profile }}, '\.([0-9]+)gb', 1) as double)
                / try_cast(regexp_extract({{ model }}, '([0-9]+) ?GB', 1) as double),
                1.0
            )
        {%- endif %}
        when try_cast(regexp_extract({{ profile }}, '^([0-9]+)g', 1) as double) > 0
            then least(try_cast(regexp_extract({{ profile }}, '^([0-9]+)g', 1) as double) / {{ slices }}, 1.0)
        else 1.0
    end
{%- endmacro %}

{#- kube-state-metrics series whose samples base_kube__series keeps one by one (typed lists): their values
    or presence change over time and staging counts time from them. Other series keep first / last time
    and the largest value. -#}
{% macro kube_metrics_with_samples() -%}
    'kube_pod_container_resource_requests', 'kube_pod_spec_volumes_persistentvolumeclaims_info'
{%- endmacro %}

{#- The kube samples as rows (cluster_id, metric_name, labels, source_file, sampled_epoch, sample_value,
    quarantine_reason null): every sample of the series in kube_metrics_with_samples, and for the others
    their first and last sample time with the largest value (what "as last seen" / capacity need). -#}
{% macro kube_series_samples() -%}
    select
        cluster_id,
        metric_name,
        labels,
        source_file,
        {{ unnest_zip([
            ('coalesce(sampled_epochs, ' ~ array_of(['first_sampled_epoch', 'last_sampled_epoch']) ~ ')', 'sampled_epoch'),
            ('coalesce(sample_values, ' ~ array_of(['max_sample_value', 'max_sample_value']) ~ ')', 'sample_value'),
        ]) }},
        cast(null as string) as quarantine_reason
    from {{ ref('base_kube__series') }}
    where sample_count > 0
{%- endmacro %}

{#- True when a text matches any of the regular expressions in a list var (e.g. gpucost_dcgm_exporter_patterns). -#}
{% macro matches_any(text, patterns) -%}
    ({%- for pattern in patterns -%}
        coalesce({{ regexp_search() }}({{ text }}, '{{ pattern | replace("'", "''") }}'), false)
        {{- " or " if not loop.last }}
    {%- else -%}false{%- endfor -%})
{%- endmacro %}

{#- A workload label of a GPU series as real exporters and scrapers write it (name: pod, namespace, container
    or pod_uid). Under the Prometheus Operator's default honorLabels: false, the workload's labels are renamed
    exported_<name> and <name> names the scrape target (the exporter's own pod): when any exported_pod /
    exported_namespace / exported_container label is present, the exported_* labels are the workload's.
    Without them, the labels name a workload unless they name the exporter itself: a pod or container
    matching var gpucost_dcgm_exporter_patterns (dcgm-exporter's own pod, which holds no GPU). -#}
{% macro prom_workload_label(name) -%}
    case
        when {{ prom_label('exported_pod') }} is not null
            or {{ prom_label('exported_namespace') }} is not null
            or {{ prom_label('exported_container') }} is not null
            {# a plain pod_uid beside them is the exporter's (the workload's uid): Prometheus's Kubernetes
               discovery gives a target no pod_uid label unless relabelled, which would rename it exported_pod_uid #}
            then {{ prom_label('exported_' ~ name) if name != 'pod_uid'
                else 'coalesce(' ~ prom_label('exported_pod_uid') ~ ', ' ~ prom_label('pod_uid') ~ ')' }}
        when {{ matches_any(prom_label('pod'), var('gpucost_dcgm_exporter_patterns')) }}
            or {{ matches_any(prom_label('container'), var('gpucost_dcgm_exporter_patterns')) }}
            then null
        else {{ prom_label(name) }}
    end
{%- endmacro %}

{#- A Hostname label that is a container id (dcgm-exporter run in Docker reports its container's hostname:
    12 or 64 hexadecimal digits), not a node name. -#}
{% macro is_container_id(text) -%}
    coalesce({{ regexp_search() }}({{ text }}, '^[0-9a-f]{12}([0-9a-f]{52})?$'), false)
{%- endmacro %}

{#- The node a GPU series is about: its Hostname (hostname) label, else kubernetes_node / node; a Hostname
    that is a container id is replaced by those node labels, else by the host of the `instance` label (the
    scrape address, host:port). Null when nothing names the node. -#}
{% macro prom_node_name() -%}
    {%- set hostname = 'coalesce(' ~ prom_label('Hostname') ~ ', ' ~ prom_label('hostname') ~ ')' -%}
    case
        when {{ hostname }} is not null and not {{ is_container_id(hostname) }} then {{ hostname }}
        when {{ hostname }} is not null
            then coalesce(
                {{ prom_label('kubernetes_node') }},
                {{ prom_label('node') }},
                nullif(regexp_replace({{ prom_label('instance') }}, ':[0-9]+$', ''), '')
            )
        else coalesce({{ prom_label('kubernetes_node') }}, {{ prom_label('node') }})
    end
{%- endmacro %}

{#- The UTC day starts (epoch seconds) a period [start, end) touches, as a list. -#}
{% macro epoch_day_starts(start_epoch, end_epoch) -%}
    {{ return(adapter.dispatch('epoch_day_starts', 'gpucost')(start_epoch, end_epoch)) }}
{%- endmacro %}

{% macro default__epoch_day_starts(start_epoch, end_epoch) -%}
    range(
        cast(floor({{ start_epoch }} / 86400) * 86400 as bigint),
        cast(greatest({{ end_epoch }}, {{ start_epoch }} + 1) as bigint),
        cast(86400 as bigint)
    )
{%- endmacro %}

{% macro spark__epoch_day_starts(start_epoch, end_epoch) -%}
    sequence(
        cast(floor({{ start_epoch }} / 86400) * 86400 as bigint),
        cast(greatest({{ end_epoch }}, {{ start_epoch }} + 1) - 1 as bigint),
        cast(86400 as bigint)
    )
{%- endmacro %}

{#- A build warning when kube_pod_labels series were landed but none carries a label_* key: kube-state-metrics v2
    exports no pod label unless started with --metric-labels-allowlist, and without them no pod has an owner
    label (team / project / user go to attribution or unallocated). Called by stg_kube__pod_labels. -#}
{% macro warn_kube_pod_labels_without_allowlist() -%}
    {%- set series = ref('base_kube__series') -%}
    {%- if execute and flags.WHICH in ('build', 'run')
        and adapter.get_relation(database=series.database, schema=series.schema, identifier=series.identifier) -%}
        {%- set result = run_query(
            "select cluster_id, count(*) from " ~ series
            ~ " where metric_name = 'kube_pod_labels' and sample_count > 0 group by 1 having count(*) filter (where "
            ~ list_size(list_where('map_keys(labels)', 'label_key', "substr(label_key, 1, 6) = 'label_'"))
            ~ " > 0) = 0 order by 1"
        ) -%}
        {%- for row in result.rows -%}
            {%- do exceptions.warn(
                "kube_pod_labels of cluster " ~ row[0] ~ " has " ~ row[1] ~ " series and none carries a label_*"
                ~ " key: kube-state-metrics exports no pod label unless started with"
                ~ " --metric-labels-allowlist=pods=[team-id,project-id,user-id] (Helm value"
                ~ " kube-state-metrics.metricLabelsAllowlist), so no pod there has an owner label."
            ) -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}

{#- A kube-state-metrics series' labels with exported_pod / exported_namespace / exported_container, when present
    and non-empty, in place of pod / namespace / container: scraped with honorLabels: false, those are the
    series' own labels and pod / namespace / container name kube-state-metrics' pod (the scrape target). -#}
{% macro prom_labels_honouring_exported(labels) -%}
    {{ return(adapter.dispatch('prom_labels_honouring_exported', 'gpucost')(labels)) }}
{%- endmacro %}

{% macro default__prom_labels_honouring_exported(labels) -%}
    case
        when
            nullif({{ labels }}['exported_pod'], '') is not null
            or nullif({{ labels }}['exported_namespace'], '') is not null
            or nullif({{ labels }}['exported_container'], '') is not null
            then map_concat({{ labels }}, map_from_entries(list_filter([
                {%- for name in ['pod', 'namespace', 'container'] %}
                {'key': '{{ name }}', 'value': nullif({{ labels }}['exported_{{ name }}'], '')}{{ "," if not loop.last }}
                {%- endfor %}
            ], lambda entry: entry.value is not null)))
        else {{ labels }}
    end
{%- endmacro %}

{% macro spark__prom_labels_honouring_exported(labels) -%}
    case
        when
            nullif({{ labels }}['exported_pod'], '') is not null
            or nullif({{ labels }}['exported_namespace'], '') is not null
            or nullif({{ labels }}['exported_container'], '') is not null
            then map_concat(
                map_filter({{ labels }}, (k, v) -> not (
                    k in ('pod', 'namespace', 'container') and nullif({{ labels }}['exported_' || k], '') is not null
                )),
                map_filter(map(
                    'pod', nullif({{ labels }}['exported_pod'], ''),
                    'namespace', nullif({{ labels }}['exported_namespace'], ''),
                    'container', nullif({{ labels }}['exported_container'], '')
                ), (k, v) -> v is not null)
            )
        else {{ labels }}
    end
{%- endmacro %}
