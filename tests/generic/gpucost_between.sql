{% test gpucost_between(model, column_name, min_value, max_value) %}
-- Rows whose value lies outside [min_value, max_value] (nulls count as outside).
select *
from {{ model }}
where {{ column_name }} is null
    or {{ column_name }} < {{ min_value }}
    or {{ column_name }} > {{ max_value }}
{% endtest %}
