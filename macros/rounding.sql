{#- Largest-remainder rounding to cents, in SQL (portable window functions).
    Within each partition the rounded amounts add up exactly to the partition's exact total rounded to
    cents (half away from zero): each amount is floored to cents, then the missing cents go one each to
    the amounts with the largest dropped fraction, ties broken by `tie_break` (a deterministic order).
    Use it over a CTE; returns the rounded value as cents_type(). -#}
{% macro largest_remainder_cents(amount, partition_by, tie_break) -%}
    cast((
        floor({{ amount }} * 100)
        + case
            when row_number() over (
                partition by {{ partition_by }}
                order by {{ amount }} * 100 - floor({{ amount }} * 100) desc, {{ tie_break }}
            ) <= round(sum({{ amount }}) over (partition by {{ partition_by }}), 2) * 100
                - sum(floor({{ amount }} * 100)) over (partition by {{ partition_by }})
                then 1
            else 0
        end
    ) / 100 as {{ cents_type() }})
{%- endmacro %}
