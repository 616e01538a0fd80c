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

{#- The exact split by given ratios, in SQL, in two steps over two CTEs: each row of a partition gets its
    share of `amount` (the same DECIMAL(38, 18) amount on every row of the partition, e.g. an origin
    charge's ListCost) by `ratio` (DECIMAL(38, 18), >= 0, summing to exactly 1 over the partition), in
    1e-18 units by the core's rule (gpucost.core.split): every row gets floor(|amount| x ratio), the units
    left go one each to the largest dropped fractions, ties by `tie_break`; a negative amount is split as
    its magnitude. The product is exact without overflow: whole units x ratio has 18 places, the fraction
    (< 1) x ratio 36. So the shares of an amount add up to it exactly. Null amount, null shares.
    split_by_ratio_terms(amount, ratio, name) is a select list: the magnitude, the floor share, the dropped
    fraction and the sign as columns `<name>__magnitude`, ... ; split_by_ratio(name, partition_by,
    tie_break), in a select over them, deals the units left. Apart, each term is computed once, and the
    window sorts these few columns rather than every column of a wide relation (in the FOCUS export over
    128 nodes x 30 days: 11.1 -> 6.7 s for four amounts on the same narrow rows). -#}
{% macro split_by_ratio_terms(amount, ratio, name) -%}
    {%- set magnitude = 'abs(cast(' ~ amount ~ ' as ' ~ money_type() ~ '))' -%}
    {%- set ratio_exact = 'cast(' ~ ratio ~ ' as ' ~ money_type() ~ ')' -%}
    {%- set fraction_share = '(cast(' ~ magnitude ~ ' - trunc(' ~ magnitude ~ ') as ' ~ money_type() ~ ') * '
        ~ ratio_exact ~ ')' -%}
    {{ magnitude }} as {{ name }}__magnitude,
    cast(trunc({{ magnitude }}) as decimal(38, 0)) * {{ ratio_exact }} + trunc({{ fraction_share }}, 18)
        as {{ name }}__floor_share,
    {{ fraction_share }} - trunc({{ fraction_share }}, 18) as {{ name }}__dropped,
    case when {{ amount }} < 0 then -1 else 1 end as {{ name }}__sign
{%- endmacro %}

{% macro split_by_ratio(name, partition_by, tie_break) -%}
    cast(
        {{ name }}__sign * (
            {{ name }}__floor_share
            + case
                when row_number() over (
                    partition by {{ partition_by }}
                    order by {{ name }}__dropped desc, {{ tie_break }}
                ) * cast(0.000000000000000001 as {{ money_type() }})
                <= {{ name }}__magnitude - sum({{ name }}__floor_share) over (partition by {{ partition_by }})
                    then cast(0.000000000000000001 as {{ money_type() }})
                else cast(0 as {{ money_type() }})
            end
        ) as {{ money_type() }}
    )
{%- endmacro %}
