{#- The digest of each line's input rows, for a model built incrementally by line: the same rule as
    gpucost.engines.reuse.fingerprint_sql (the allocation Python models'; tests/python/test_reuse.py
    checks the two give the same digests). `inputs` is a list of [relation, [columns]], every relation
    keyed by column `key` (columns ['*']: the whole row as one struct, for a CTE of the model that
    selects only what it reads; fingerprint_sql has no such form); `salt` is what every digest also
    depends on (the model's code). Per input, a line's row count and two sums of 64-bit row hashes
    (sums, not XOR: two equal rows do not cancel); one md5 over them. The first input names the lines:
    a key only the others hold gets no digest. Returns input_key (the key as text) and
    input_fingerprint. -#}
{% macro line_digests(inputs, key, salt) -%}
    {%- set salt_literal = "'" ~ (salt | replace("'", "''")) ~ "'" -%}
    select
        input_key,
        md5({{ salt_literal }} || string_agg(frame || ':' || n || ':' || h1 || ':' || h2, ',' order by frame))
            as input_fingerprint
    from (
        {%- for relation, columns in inputs %}
        {%- set quoted = [] %}
        {%- for column in columns %}{% do quoted.append(adapter.quote(column)) %}{% endfor %}
        {#- the whole row: DuckDB reads a relation's name as its row (a struct) -#}
        {%- set hashed = relation if columns == ['*'] else quoted | join(', ') %}
        select
            {{ loop.index0 }} as frame,
            cast({{ key }} as varchar) as input_key,
            count(*) as n,
            sum(hash({{ hashed }})) as h1,
            sum(hash({{ hashed }}, {{ salt_literal }})) as h2
        from {{ relation }}
        group by all
        {%- if not loop.last %}
        union all
        {%- endif %}
        {%- endfor %}
    ) as lines
    group by input_key
    having bool_or(frame = 0)
{%- endmacro %}

{#- The salt of a SQL model's line digests: its own code, every macro of this project (split_by_ratio and
    the rest) and the engine's version, so that a changed rule or a new DuckDB recomputes every line. -#}
{% macro line_digest_salt() -%}
    {%- set code = [model.raw_code] -%}
    {%- if execute -%}
        {%- do code.append(run_query('select version()').columns[0].values()[0]) -%}
        {%- for macro in graph.get('macros', {}).values() | sort(attribute='unique_id') -%}
            {%- if macro.package_name == project_name -%}{% do code.append(macro.macro_sql) %}{%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {{- return(local_md5(code | join('\n'))) -}}
{%- endmacro %}
