{% test gpucost_unique_combination_of_columns(model, combination_of_columns, rows_to_check=none) %}
-- A model's primary key over several columns: the combinations that occur more than once (nulls count as
-- one value, so a key column that may be null is still a key). In two steps, since grouping tens of millions
-- of samples by wide text columns is slow (26 s on 43M DCGM samples, against 5 s): first one hash of the
-- columns per row, grouped; then the columns themselves, only for the rows whose hash repeats. Exact: a
-- duplicate always repeats its hash, and a hash two different combinations share is dropped by the second
-- step's grouping. With no repeated hash, the second step reads nothing.
-- rows_to_check: a condition on the model's rows (its placeholders rendered when the test runs:
-- render_test_scope) naming the rows that may be new since the key last held; only their combinations are
-- looked for, among every row of the model (a new row repeating a kept one fails too). An incremental table
-- whose kept rows never change key is checked at the cost of its new rows and one scan of the hashes.
{%- set columns = combination_of_columns | join(', ') %}
{%- set scope = render_test_scope(rows_to_check) if rows_to_check is not none else 'true' %}
{%- set scoped = scope != 'true' %}
with

{% if scoped -%}
hashes_to_check as (

    select distinct hash({{ columns }}) as combination_hash
    from {{ model }}
    where {{ scope }}

),

{% endif -%}
repeated_hashes as (

    select hash({{ columns }}) as combination_hash
    from {{ model }}
    {%- if scoped %}
    where hash({{ columns }}) in (select hashes_to_check.combination_hash from hashes_to_check)
    {%- endif %}
    group by hash({{ columns }})
    having count(*) > 1

),

suspects as (

    -- every column: a combination may name an expression of them (cast(labels as string))
    select *
    from {{ model }}
    where hash({{ columns }}) in (select repeated_hashes.combination_hash from repeated_hashes)

)

select
    {{ columns }},
    count(*) as occurrences
from suspects
group by {{ columns }}
having count(*) > 1
{% endtest %}
