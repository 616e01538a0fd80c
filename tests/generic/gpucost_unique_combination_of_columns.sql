{% test gpucost_unique_combination_of_columns(model, combination_of_columns) %}
-- A model's primary key over several columns: the combinations that occur more than once (nulls count as
-- one value, so a key column that may be null is still a key). In two steps, since grouping tens of millions
-- of samples by wide text columns is slow (26 s on 43M DCGM samples, against 5 s): first one hash of the
-- columns per row, grouped; then the columns themselves, only for the rows whose hash repeats. Exact: a
-- duplicate always repeats its hash, and a hash two different combinations share is dropped by the second
-- step's grouping. With no repeated hash, the second step reads nothing.
{%- set columns = combination_of_columns | join(', ') %}
with

repeated_hashes as (

    select hash({{ columns }}) as combination_hash
    from {{ model }}
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
