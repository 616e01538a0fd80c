{#- Owner ids that are not teams or projects but say where money sits. -#}
{% macro unallocated_owner() -%}__unallocated__{%- endmacro %}

{% macro idle_owner() -%}__idle__{%- endmacro %}

{#- The scope idle GPU cost is spread within (var gpucost_idle_scope): the node line, or its cluster and day. -#}
{% macro idle_scope_key(lines) -%}
    {%- set scope = var('gpucost_idle_scope') -%}
    {%- if scope == 'node_hour' -%}
        {{ lines }}.charge_id
    {%- elif scope == 'cluster_day' -%}
        {{ lines }}.cluster_id || '/' || cast({{ lines }}.charge_date as varchar)
    {%- else -%}
        {{ exceptions.raise_compiler_error("gpucost_idle_scope must be node_hour or cluster_day, got '" ~ scope ~ "'") }}
    {%- endif -%}
{%- endmacro %}

{#- Scopes a shared line is spread within: 'account' (its billing account's period) or 'period' (all accounts). -#}
{% macro shared_scope_key(relation, level) -%}
    {%- if level == 'account' -%}
        'account:' || coalesce({{ relation }}.billing_account_id, '') || '|'
        || cast({{ relation }}.billing_period_start as varchar) || '|' || {{ relation }}.billing_currency
    {%- else -%}
        'period:' || cast({{ relation }}.billing_period_start as varchar) || '|' || {{ relation }}.billing_currency
    {%- endif -%}
{%- endmacro %}
