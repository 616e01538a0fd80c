{% test gpucost_primary_key(model, column_name) %}
-- A model's primary key on one column: dbt's unique and not_null in one query (one test node for a key,
-- not two, in every build). Every key value that is null or occurs more than once.
select
    {{ column_name }} as key_value,
    count(*) as occurrences
from {{ model }}
group by {{ column_name }}
having count(*) > 1 or {{ column_name }} is null
{% endtest %}
