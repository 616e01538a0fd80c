{#- One row per key of a relation of landed samples: a sample landed twice (a re-scraped file beside the
    first, two exporters behind one job) counts once, and of two values for one key the larger is kept.
    `keys`: the key columns (the sample time among them); `value`: the sampled value's column. -#}
{% macro one_row_per_sample(relation, keys, value) -%}
    select
        {%- for key in keys %}
        {{ key }},
        {%- endfor %}
        max({{ value }}) as {{ value }}
    from {{ relation }}
    group by {{ range(1, keys | length + 1) | join(', ') }}
{%- endmacro %}
