{% test gpucost_unallocated_has_reason(model) %}
-- An unallocated row must say why; a placed row must not carry a reason.
select *
from {{ model }}
where (allocation_kind = 'unallocated') <> (unallocated_reason is not null)
{% endtest %}
