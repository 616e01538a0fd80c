{% test gpucost_unique_combination_of_columns(model, combination_of_columns) %}
-- A model's primary key over several columns: the combinations that occur more than once (nulls count as
-- one value, so a key column that may be null is still a key).
{%- set columns = combination_of_columns | join(', ') %}
select
    {{ columns }},
    count(*) as occurrences
from {{ model }}
group by {{ columns }}
having count(*) > 1
{% endtest %}
