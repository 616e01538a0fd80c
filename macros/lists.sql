{#- Lists (DuckDB) / arrays (Spark), written once in the models through these macros. The DuckDB side renders
    exactly the SQL the models had before (list_transform with `lambda`, unnest, struct_pack, ...); the Spark
    side uses Spark's higher-order functions (transform, filter with `x -> ...`), explode / inline and
    named_struct. Positions are 1-based on both. -#}

{#- Each element of a list through an expression of `var`: list_map('samples', 'sample', 'sample[1]'). -#}
{% macro list_map(list, var, expression) -%}
    {{ return(adapter.dispatch('list_map', 'gpucost')(list, var, expression)) }}
{%- endmacro %}

{% macro default__list_map(list, var, expression) -%}
    list_transform({{ list }}, lambda {{ var }}: {{ expression }})
{%- endmacro %}

{% macro spark__list_map(list, var, expression) -%}
    transform({{ list }}, {{ var }} -> {{ expression }})
{%- endmacro %}

{#- The elements of a list for which a condition on `var` holds. -#}
{% macro list_where(list, var, condition) -%}
    {{ return(adapter.dispatch('list_where', 'gpucost')(list, var, condition)) }}
{%- endmacro %}

{% macro default__list_where(list, var, condition) -%}
    list_filter({{ list }}, lambda {{ var }}: {{ condition }})
{%- endmacro %}

{% macro spark__list_where(list, var, condition) -%}
    filter({{ list }}, {{ var }} -> {{ condition }})
{%- endmacro %}

{#- A struct from (name, expression) pairs. -#}
{% macro struct_of(fields) -%}
    {{ return(adapter.dispatch('struct_of', 'gpucost')(fields)) }}
{%- endmacro %}

{% macro default__struct_of(fields) -%}
    struct_pack(
        {%- for name, expression in fields %}
        {{ name }} := {{ expression }}{{ "," if not loop.last }}
        {%- endfor %}
    )
{%- endmacro %}

{% macro spark__struct_of(fields) -%}
    named_struct(
        {%- for name, expression in fields %}
        '{{ name }}', {{ expression }}{{ "," if not loop.last }}
        {%- endfor %}
    )
{%- endmacro %}

{#- The element at a 1-based position (null past the end). -#}
{% macro list_item(list, position) -%}
    {{ return(adapter.dispatch('list_item', 'gpucost')(list, position)) }}
{%- endmacro %}

{% macro default__list_item(list, position) -%}{{ list }}[{{ position }}]{%- endmacro %}

{% macro spark__list_item(list, position) -%}element_at({{ list }}, {{ position }}){%- endmacro %}

{#- Number of elements (the lists given here are never null). -#}
{% macro list_size(list) -%}
    {{ return(adapter.dispatch('list_size', 'gpucost')(list)) }}
{%- endmacro %}

{% macro default__list_size(list) -%}len({{ list }}){%- endmacro %}

{% macro spark__list_size(list) -%}size({{ list }}){%- endmacro %}

{#- Smallest / largest element; the distinct elements; the elements sorted (nulls last); two lists joined;
    the elements as text joined by a separator (nulls skipped). -#}
{% macro list_min(list) -%}{{ return(adapter.dispatch('list_min', 'gpucost')(list)) }}{%- endmacro %}

{% macro default__list_min(list) -%}list_min({{ list }}){%- endmacro %}

{% macro spark__list_min(list) -%}array_min({{ list }}){%- endmacro %}

{% macro list_max(list) -%}{{ return(adapter.dispatch('list_max', 'gpucost')(list)) }}{%- endmacro %}

{% macro default__list_max(list) -%}list_max({{ list }}){%- endmacro %}

{% macro spark__list_max(list) -%}array_max({{ list }}){%- endmacro %}

{% macro list_unique(list) -%}{{ return(adapter.dispatch('list_unique', 'gpucost')(list)) }}{%- endmacro %}

{% macro default__list_unique(list) -%}list_distinct({{ list }}){%- endmacro %}

{% macro spark__list_unique(list) -%}array_distinct({{ list }}){%- endmacro %}

{% macro list_sorted(list) -%}{{ return(adapter.dispatch('list_sorted', 'gpucost')(list)) }}{%- endmacro %}

{% macro default__list_sorted(list) -%}list_sort({{ list }}){%- endmacro %}

{% macro spark__list_sorted(list) -%}array_sort({{ list }}){%- endmacro %}

{% macro list_join(first, second) -%}
    {{ return(adapter.dispatch('list_join', 'gpucost')(first, second)) }}
{%- endmacro %}

{% macro default__list_join(first, second) -%}list_concat({{ first }}, {{ second }}){%- endmacro %}

{% macro spark__list_join(first, second) -%}concat({{ first }}, {{ second }}){%- endmacro %}

{% macro list_text(list, separator) -%}
    {{ return(adapter.dispatch('list_text', 'gpucost')(list, separator)) }}
{%- endmacro %}

{% macro default__list_text(list, separator) -%}array_to_string({{ list }}, {{ separator }}){%- endmacro %}

{% macro spark__list_text(list, separator) -%}array_join({{ list }}, {{ separator }}){%- endmacro %}

{#- The sum of a list's numbers (0 for an empty list, as list_sum gives null there: coalesce outside). -#}
{% macro list_total(list) -%}{{ return(adapter.dispatch('list_total', 'gpucost')(list)) }}{%- endmacro %}

{% macro default__list_total(list) -%}list_sum({{ list }}){%- endmacro %}

{% macro spark__list_total(list) -%}
    case when size({{ list }}) > 0 then aggregate({{ list }}, cast(0 as bigint), (total, n) -> total + n) end
{%- endmacro %}

{#- Select-list item: one row per element of a list, named `name` (a list's rows next to the row's other
    columns; none for an empty or null list). -#}
{% macro unnest_as(list, name) -%}
    {{ return(adapter.dispatch('unnest_as', 'gpucost')(list, name)) }}
{%- endmacro %}

{% macro default__unnest_as(list, name) -%}unnest({{ list }}) as {{ name }}{%- endmacro %}

{% macro spark__unnest_as(list, name) -%}explode({{ list }}) as {{ name }}{%- endmacro %}

{#- Select-list items: one row per position of several lists side by side ((list, name) pairs; a shorter
    list gives nulls), as DuckDB's several unnest() in one select. Spark allows one generator per select:
    inline(arrays_zip(...)). -#}
{% macro unnest_zip(pairs) -%}
    {{ return(adapter.dispatch('unnest_zip', 'gpucost')(pairs)) }}
{%- endmacro %}

{% macro default__unnest_zip(pairs) -%}
    {%- for list, name in pairs -%}
        unnest({{ list }}) as {{ name }}{{ ",\n        " if not loop.last }}
    {%- endfor -%}
{%- endmacro %}

{% macro spark__unnest_zip(pairs) -%}
    {%- set lists = [] -%}{%- set names = [] -%}
    {%- for list, name in pairs -%}{%- do lists.append(list) -%}{%- do names.append(name) -%}{%- endfor -%}
    inline(arrays_zip({{ lists | join(', ') }})) as ({{ names | join(', ') }})
{%- endmacro %}

{#- The integers from start (inclusive) to stop (exclusive) by a positive step, as a list (DuckDB range;
    Spark's sequence includes its stop and fails on an empty range, hence the guard). -#}
{% macro int_range(start, stop, step) -%}
    {{ return(adapter.dispatch('int_range', 'gpucost')(start, stop, step)) }}
{%- endmacro %}

{% macro default__int_range(start, stop, step) -%}range({{ start }}, {{ stop }}, {{ step }}){%- endmacro %}

{% macro spark__int_range(start, stop, step) -%}
    case when {{ stop }} > {{ start }} then sequence({{ start }}, {{ stop }} - 1, {{ step }}) end
{%- endmacro %}

{#- arg_max / arg_min as DuckDB has them: the value on the row with the largest / smallest key, among the
    rows whose value is not null. Spark's max_by / min_by skip null keys only, so the key is nulled where
    the value is. -#}
{% macro arg_max_of(value, key) -%}
    {{ return(adapter.dispatch('arg_max_of', 'gpucost')(value, key)) }}
{%- endmacro %}

{% macro default__arg_max_of(value, key) -%}arg_max({{ value }}, {{ key }}){%- endmacro %}

{% macro spark__arg_max_of(value, key) -%}
    max_by({{ value }}, case when ({{ value }}) is not null then {{ key }} end)
{%- endmacro %}

{% macro arg_min_of(value, key) -%}
    {{ return(adapter.dispatch('arg_min_of', 'gpucost')(value, key)) }}
{%- endmacro %}

{% macro default__arg_min_of(value, key) -%}arg_min({{ value }}, {{ key }}){%- endmacro %}

{% macro spark__arg_min_of(value, key) -%}
    min_by({{ value }}, case when ({{ value }}) is not null then {{ key }} end)
{%- endmacro %}

{#- A 128-bit-wide integer for exact products of integers (DuckDB hugeint; Spark decimal(38, 0)). -#}
{% macro wide_int_type() -%}
    {{ return(adapter.dispatch('wide_int_type', 'gpucost')()) }}
{%- endmacro %}

{% macro default__wide_int_type() -%}hugeint{%- endmacro %}

{% macro spark__wide_int_type() -%}decimal(38, 0){%- endmacro %}

{#- Aggregate: the distinct non-null texts of a group, sorted and joined by a separator (null when none). -#}
{% macro distinct_text_agg(expression, separator) -%}
    {{ return(adapter.dispatch('distinct_text_agg', 'gpucost')(expression, separator)) }}
{%- endmacro %}

{% macro default__distinct_text_agg(expression, separator) -%}
    string_agg(distinct {{ expression }}, {{ separator }} order by {{ expression }})
{%- endmacro %}

{% macro spark__distinct_text_agg(expression, separator) -%}
    case when count({{ expression }}) > 0 then array_join(array_sort(collect_set({{ expression }})), {{ separator }}) end
{%- endmacro %}
