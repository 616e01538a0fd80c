{#- Largest-remainder rounding to cents, in SQL (portable window functions).
    Within each partition the rounded amounts add up exactly to the partition's exact total rounded to
    cents (half away from zero): each amount is floored to cents, then the missing cents go one each to
    the amounts with the largest dropped fraction, ties broken by `tie_break` (a deterministic order).
    Whole units and the fraction are handled apart so that DECIMAL(38, 18) amounts up to 1e20 never
    overflow (x * 100 would need 39 digits). Use it over a CTE; returns the rounded value as cents_type(). -#}
{% macro floor_cents(amount) -%}
    (cast(trunc({{ amount }}) as decimal(38, 0)) * 100 + floor(({{ amount }} - trunc({{ amount }})) * 100))
{%- endmacro %}

{#- The dropped fraction of a cent, in [0, 1). -#}
{% macro cent_fraction(amount) -%}
    (({{ amount }} - trunc({{ amount }})) * 100 - floor(({{ amount }} - trunc({{ amount }})) * 100))
{%- endmacro %}

{#- Whole cents nearest to an amount, halves away from zero (like round(x, 2), without overflow). -#}
{% macro round_half_away_cents(amount) -%}
    ({{ floor_cents(amount) }} + case
        when {{ amount }} >= 0 and {{ cent_fraction(amount) }} >= 0.5 then 1
        when {{ amount }} < 0 and {{ cent_fraction(amount) }} > 0.5 then 1
        else 0
    end)
{%- endmacro %}

{% macro largest_remainder_cents(amount, partition_by, tie_break) -%}
    cast((
        {{ floor_cents(amount) }}
        + case
            when row_number() over (
                partition by {{ partition_by }}
                order by {{ cent_fraction(amount) }} desc, {{ tie_break }}
            ) <= {{ round_half_away_cents('sum(' ~ amount ~ ') over (partition by ' ~ partition_by ~ ')') }}
                - sum({{ floor_cents(amount) }}) over (partition by {{ partition_by }})
                then 1
            else 0
        end
    ) * cast(0.01 as decimal(3, 2)) as {{ cents_type() }})
{%- endmacro %}

{#- The exact split in SQL: integer 1e-18 units split evenly over `parts` shares, the share of the
    0-based `part_index`. Every share gets units // parts, and the units left over go one each to
    the first indexes (largest remainder with equal weights, ties by index), so the shares of an
    amount add up to it exactly. The weighted split runs in the Python core (gpucost.core.split). -#}
{% macro split_units_evenly(units, parts, part_index) -%}
    ({{ int_div(units, parts) }} + case when {{ part_index }} < {{ units }} % {{ parts }} then 1 else 0 end)
{%- endmacro %}
