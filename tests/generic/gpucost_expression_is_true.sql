{% test gpucost_expression_is_true(model, expression) %}
-- Rows for which the expression is not true.
select *
from {{ model }}
where not coalesce(({{ expression }}), false)
{% endtest %}
