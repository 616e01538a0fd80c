{#- Seeds on the spark target, overriding dbt-spark's spark__load_csv_rows. Under `method: session` dbt-spark
    formats the bindings into the SQL text itself: an empty CSV field (None) becomes the string 'None', not
    null, and a number goes through float (a seed's decimal would lose digits). Here every value is written
    as a text literal cast to the column's type, an empty field as null: the same values as on DuckDB. -#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {%- set batch_size = get_batch_size() -%}
    {%- set column_override = model['config'].get('column_types', {}) -%}
    {%- set types = [] -%}
    {%- for col_name in agate_table.column_names -%}
        {%- do types.append(column_override.get(col_name, adapter.convert_type(agate_table, loop.index0))) -%}
    {%- endfor -%}
    {%- set statements = [] -%}
    {%- for chunk in agate_table.rows | batch(batch_size) -%}
        {%- set sql -%}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for value in row -%}
                    cast({{ spark_seed_literal(value) }} as {{ types[loop.index0] }})
                    {%- if not loop.last %}, {% endif -%}
                {%- endfor -%})
                {%- if not loop.last %},{% endif %}
            {% endfor -%}
        {%- endset -%}
        {%- do adapter.add_query(sql, abridge_sql_log=True) -%}
        {%- if loop.index0 == 0 -%}{%- do statements.append(sql) -%}{%- endif -%}
    {%- endfor -%}
    {{ return(statements[0] if statements else '') }}
{% endmacro %}

{#- A seed value as a Spark string literal (string literals are raw on the spark target: quotes cannot be
    escaped, so a value holding a single quote is written in double quotes, one holding both is
    concatenated from pieces). -#}
{% macro spark_seed_literal(value) -%}
    {%- if value is none -%}null
    {%- else -%}
        {%- set text = value.isoformat() if value.isoformat is defined else (value | string) -%}
        {%- if "'" not in text -%}'{{ text }}'
        {%- elif '"' not in text -%}"{{ text }}"
        {%- else -%}concat('{{ text.split("'") | join("', \"'\", '") }}')
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}
