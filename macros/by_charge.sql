{#- A mart built by origin charge (fct_allocation_metric_splits, rpt_focus_allocated_charges): incremental on DuckDB
    (delete+insert on input_key, the charge id as text; a table elsewhere), new columns appended, and after an
    incremental run the rows of charges no longer allocated deleted (and rows without a key, from a version of the
    table before its digests). -#}
{% macro by_charge_config() -%}
    {{- return({
        'materialized': 'incremental' if target.type == 'duckdb' else 'table',
        'incremental_strategy': 'delete+insert',
        'unique_key': 'input_key',
        'on_schema_change': 'append_new_columns',
        'post_hook': [
            "{% if is_incremental() %}delete from {{ this }} where input_key is null or input_key not in"
            ~ " (select cast(charge_id as varchar) from {{ ref('fct_cost_allocation') }}){% endif %}"
        ],
    }) -}}
{%- endmacro %}

{#- The charges of `digests` (line_digests' rows) to compute again: all of them, or with `keep` (an incremental run
    whose table holds digests) those whose digest the table does not hold. -#}
{% macro charges_to_recompute(digests, keep) -%}
    select {{ digests }}.* from {{ digests }}
    {% if keep -%}
        where not exists (
            select 1 from {{ this }} as kept
            where kept.input_key = {{ digests }}.input_key and kept.input_fingerprint = {{ digests }}.input_fingerprint
        )
    {%- endif %}
{%- endmacro %}
