{#- Owner ids that are not teams or projects but say where money sits. -#}
{% macro unallocated_owner() -%}__unallocated__{%- endmacro %}

{% macro idle_owner() -%}__idle__{%- endmacro %}

{#- The project of cost placed on a team alone (attribution_method model_team): the team is known, the project
    not yet. -#}
{% macro team_only_project() -%}__unattributed__{%- endmacro %}

{#- The attribution methods that place a workload from a model version's scores and measured gates, on a project
    and on a team alone; the rows they place carry attribution_model_version. -#}
{% macro learned_project_methods() -%}'model', 'cold_start', 'declared_name'{%- endmacro %}

{% macro learned_team_methods() -%}'model_team', 'cold_start_team'{%- endmacro %}

{#- Scope keys of idle GPU cost, narrow to wide (var gpucost_idle_scope): node_hour spreads within the
    node line and falls back to its cluster-day; cluster_day spreads within the cluster-day only. -#}
{% macro idle_scope_key(lines, level) -%}
    {%- if level == 'node_hour' -%}
        'line:' || {{ lines }}.charge_id
    {%- else -%}
        'cluster_day:' || {{ lines }}.cluster_id || '/' || cast({{ lines }}.charge_date as string)
    {%- endif -%}
{%- endmacro %}

{% macro idle_scope_keys(lines) -%}
    {%- set scope = var('gpucost_idle_scope') -%}
    {%- if scope == 'node_hour' -%}
        {{ array_of([idle_scope_key(lines, 'node_hour'), idle_scope_key(lines, 'cluster_day')]) }}
    {%- elif scope == 'cluster_day' -%}
        {{ array_of([idle_scope_key(lines, 'cluster_day')]) }}
    {%- else -%}
        {{ exceptions.raise_compiler_error("gpucost_idle_scope must be node_hour or cluster_day, got '" ~ scope ~ "'") }}
    {%- endif -%}
{%- endmacro %}

{#- Scopes a shared line is spread within: 'account' (its billing account's period) or 'period' (all accounts). -#}
{% macro shared_scope_key(relation, level) -%}
    {%- if level == 'account' -%}
        'account:' || coalesce({{ relation }}.billing_account_id, '') || '|'
        || cast({{ relation }}.billing_period_start as string) || '|' || {{ relation }}.billing_currency
    {%- else -%}
        'period:' || cast({{ relation }}.billing_period_start as string) || '|' || {{ relation }}.billing_currency
    {%- endif -%}
{%- endmacro %}

{#- on-run-end: say how much was quarantined (records and bill money), so a warning is never just a count. -#}
{% macro log_quarantine_summary() -%}
    {%- if execute and flags.WHICH in ('build', 'run') -%}
        {%- set relation = adapter.get_relation(database=target.database, schema='marts', identifier='rpt_quarantine') -%}
        {%- if relation is not none -%}
            {%- set result = run_query(
                "select count(*), coalesce(sum(record_count), 0), cast(coalesce(sum(billed_cost), 0) as decimal(38, 2)),"
                ~ " count(distinct source_file) from " ~ relation
            ) -%}
            {%- set row = result.rows[0] -%}
            {%- if row[0] > 0 -%}
                {{ log("QUARANTINE: " ~ row[1] ~ " records in " ~ row[3] ~ " file(s), holding "
                    ~ row[2] ~ " of bill money; see marts.rpt_quarantine (set var"
                    ~ " gpucost_quarantine_severity: error to fail the build)", info=true) }}
            {%- endif -%}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{#- The workload field an attribution override or rule matches on (its match_field column). -#}
{% macro attribution_field(workloads, match_field) -%}
    coalesce(case {{ match_field }}
        when 'workload_id' then {{ workloads }}.workload_id
        when 'namespace' then {{ workloads }}.namespace
        when 'pod' then {{ workloads }}.pod
        when 'user' then {{ workloads }}.label_user_id
        when 'team_label' then {{ workloads }}.label_team_id
        when 'project_label' then {{ workloads }}.label_project_id
        when 'app' then {{ workloads }}.label_app
        when 'image_repository' then {{ workloads }}.image_repository
        when 'cluster' then {{ workloads }}.cluster_id
    end, '')
{%- endmacro %}

{#- The project an override or rule names: its project_id, else its pattern's first capture group. -#}
{% macro attribution_project(workloads, matcher) -%}
    lower(coalesce(
        nullif(trim({{ matcher }}.project_id), ''),
        nullif(regexp_extract(
            {{ attribution_field(workloads, matcher ~ '.match_field') }}, {{ matcher }}.match_pattern, 1
        ), '')
    ))
{%- endmacro %}

{#- The scope a reservation is weighed in: the cluster and the bill line's period. -#}
{% macro reservation_scope_key(lines) -%}
    'reservation:' || {{ lines }}.cluster_id || '|' || cast({{ lines }}.period_start_epoch as string)
    || '|' || cast({{ lines }}.period_end_epoch as string)
{%- endmacro %}

{#- Who carries unused commitment under the idle policies that name one owner. -#}
{% macro idle_commitment_owner(level) -%}
    {%- if var('gpucost_idle_policy') == 'platform' -%}
        {{ var('gpucost_platform_team_id') if level == 'team' else var('gpucost_platform_project_id') }}
    {%- else -%}
        {{ idle_owner() }}
    {%- endif -%}
{%- endmacro %}

{#- Attribution methods that rest on an explicit valid tag or a human decision: the learned model trains on
    these workloads' projects, and they are not "untagged" in rpt_attribution_quality. -#}
{% macro label_attribution_methods() -%}
    ('pod_label', 'slurm_account', 'override')
{%- endmacro %}

{#- The bill tag keys that name a line's owner (role: project, team or user), in the order they are tried:
    the single-key var gpucost_tag_key_<role> (kept as the first key; the FOCUS export writes it), then each
    key of the list var gpucost_tag_keys_<role>, each with every prefix of gpucost_tag_key_prefixes (''
    for the key as written, 'user:' for AWS user tags as AWS writes them into FOCUS Tags). -#}
{% macro owner_tag_keys(role) -%}
    {%- set keys = [var('gpucost_tag_key_' ~ role, none)] + (var('gpucost_tag_keys_' ~ role, []) or []) -%}
    {%- set prefixes = var('gpucost_tag_key_prefixes', ['']) or [''] -%}
    {%- set found = [] -%}
    {%- for key in keys if key -%}
        {%- for prefix in prefixes -%}
            {%- set candidate = (prefix or '') ~ key -%}
            {%- if candidate is string and ("'" in candidate or '"' in candidate or '\\' in candidate) -%}
                {{ exceptions.raise_compiler_error("owner tag key " ~ candidate ~ " (vars gpucost_tag_key*) must not contain quotes or backslashes") }}
            {%- endif -%}
            {%- if candidate not in found -%}{%- do found.append(candidate) -%}{%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(found) }}
{%- endmacro %}

{#- The owner named by a line's tags (JSON) for a role: the value of the first of owner_tag_keys(role) that the
    tags carry (as written; staging's later rules judge it). -#}
{% macro owner_tag_value(tags, role) -%}
    {%- set keys = owner_tag_keys(role) -%}
    {%- if keys -%}
    coalesce(
        {%- for key in keys %}
        {{ json_text_at(tags, key) }}{{ "," if not loop.last }}
        {%- endfor %}
    )
    {%- else -%}
    cast(null as string)
    {%- endif -%}
{%- endmacro %}
