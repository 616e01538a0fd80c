{#- Money is DECIMAL(38, 18) from the raw file to the mart: exact, never float. -#}
{% macro money_type() -%}
    {{ return(adapter.dispatch('money_type', 'gpucost')()) }}
{%- endmacro %}

{% macro default__money_type() -%}decimal(38, 18){%- endmacro %}

{#- Cents, once rounded for statements. -#}
{% macro cents_type() -%}decimal(38, 2){%- endmacro %}

{#- Unix epoch seconds of a timestamp, as bigint (portable; not dbt.datediff, whose 'hour' differs by engine). -#}
{% macro epoch_seconds(ts) -%}
    {{ return(adapter.dispatch('epoch_seconds', 'gpucost')(ts)) }}
{%- endmacro %}

{% macro default__epoch_seconds(ts) -%}cast(unix_timestamp({{ ts }}) as bigint){%- endmacro %}

{% macro duckdb__epoch_seconds(ts) -%}cast(epoch({{ ts }}) as bigint){%- endmacro %}

{#- A UTC timestamp from unix epoch seconds. -#}
{% macro from_epoch_seconds(seconds) -%}
    {{ return(adapter.dispatch('from_epoch_seconds', 'gpucost')(seconds)) }}
{%- endmacro %}

{% macro default__from_epoch_seconds(seconds) -%}cast(from_unixtime({{ seconds }}) as timestamp){%- endmacro %}

{% macro duckdb__from_epoch_seconds(seconds) -%}cast(to_timestamp({{ seconds }}) at time zone 'UTC' as timestamp){%- endmacro %}

{#- A decimal literal (text, e.g. '3600.0') that computes as a double on both engines. DuckDB divides
    decimals as doubles; Spark keeps decimal arithmetic decimal, with as few as 6 fractional digits after a
    division (2 / 3600.0 is 0.000556), so there it is a double literal (3600.0D). -#}
{% macro double_literal(text) -%}
    {{ return(adapter.dispatch('double_literal', 'gpucost')(text)) }}
{%- endmacro %}

{% macro default__double_literal(text) -%}{{ text }}{%- endmacro %}

{% macro spark__double_literal(text) -%}{{ text }}D{%- endmacro %}

{#- Hours between two timestamps, from epoch seconds (fractional, exact to the second). -#}
{% macro hours_between(start_ts, end_ts) -%}
    (({{ epoch_seconds(end_ts) }} - {{ epoch_seconds(start_ts) }}) / {{ double_literal('3600.0') }})
{%- endmacro %}

{#- The start of the hour containing epoch seconds, as epoch seconds (integer maths, portable). -#}
{% macro epoch_hour_floor(seconds) -%}
    (cast(floor({{ seconds }} / 3600) as bigint) * 3600)
{%- endmacro %}

{#- dbt.safe_cast is a plain cast on DuckDB; make it forgiving, as its name says. -#}
{% macro duckdb__safe_cast(field, type) -%}try_cast({{ field }} as {{ type }}){%- endmacro %}

{#- Parse an ISO-8601 / FOCUS timestamp text to a UTC timestamp, or null when it is not one.
    Accepts '2024-09-01 00:00:00', '2024-09-01T00:00:00Z', offsets like '+02:00', '+0200' or '+00'
    (how a Parquet TIMESTAMPTZ column reads as text). -#}
{% macro parse_utc_timestamp(text) -%}
    {{ return(adapter.dispatch('parse_utc_timestamp', 'gpucost')(text)) }}
{%- endmacro %}

{% macro duckdb__parse_utc_timestamp(text) -%}
    cast(try_cast(
        case
            when regexp_matches(trim({{ text }}), '(Z|[+-][0-9]{2}(:?[0-9]{2})?)$') then trim({{ text }})
            else trim({{ text }}) || 'Z'
        end as timestamptz
    ) at time zone 'UTC' as timestamp)
{%- endmacro %}

{% macro default__parse_utc_timestamp(text) -%}
    to_utc_timestamp(to_timestamp(replace(replace(trim({{ text }}), 'T', ' '), 'Z', '')), 'UTC')
{%- endmacro %}

{#- Spark's cast reads ISO-8601 with or without an offset (the session time zone is UTC, profiles.yml)
    and is null when the text is not a timestamp (ANSI mode is off under dbt-spark). -#}
{% macro spark__parse_utc_timestamp(text) -%}
    try_cast(trim({{ text }}) as timestamp)
{%- endmacro %}

{#- The name of the boolean regular-expression search function (true when the pattern matches anywhere in
    the text), called as {{ regexp_search() }}(text, pattern). String literals are raw on both engines
    (Spark: spark.sql.parser.escapedStringLiterals in the profile), so patterns read the same. -#}
{% macro regexp_search() -%}
    {{ return(adapter.dispatch('regexp_search', 'gpucost')()) }}
{%- endmacro %}

{% macro default__regexp_search() -%}regexp_matches{%- endmacro %}

{% macro spark__regexp_search() -%}regexp{%- endmacro %}

{#- True when a double is NaN or infinite (null stays null). -#}
{% macro is_not_finite(value) -%}
    {{ return(adapter.dispatch('is_not_finite', 'gpucost')(value)) }}
{%- endmacro %}

{% macro default__is_not_finite(value) -%}(not isfinite({{ value }})){%- endmacro %}

{% macro spark__is_not_finite(value) -%}(isnan({{ value }}) or abs({{ value }}) = double('infinity')){%- endmacro %}

{#- JSON text as a JSON value, null when it is not valid JSON (Spark keeps JSON as text). -#}
{% macro json_or_null(text) -%}
    {{ return(adapter.dispatch('json_or_null', 'gpucost')(text)) }}
{%- endmacro %}

{% macro default__json_or_null(text) -%}try_cast({{ text }} as json){%- endmacro %}

{% macro spark__json_or_null(text) -%}
    case when get_json_object({{ text }}, '$') is not null then {{ text }} end
{%- endmacro %}

{#- The text of a top-level key of a JSON object (null when absent). -#}
{% macro json_text_at(json, key) -%}
    {{ return(adapter.dispatch('json_text_at', 'gpucost')(json, key)) }}
{%- endmacro %}

{% macro default__json_text_at(json, key) -%}json_extract_string({{ json }}, '$."{{ key }}"'){%- endmacro %}

{% macro spark__json_text_at(json, key) -%}get_json_object({{ json }}, "$['{{ key }}']"){%- endmacro %}

{#- A bill delivery folder's own time when its name is one (20261101T120000Z, 2026-11-01T12:00:00Z, ...). -#}
{% macro parse_delivery_timestamp(text) -%}
    {{ return(adapter.dispatch('parse_delivery_timestamp', 'gpucost')(text)) }}
{%- endmacro %}

{% macro default__parse_delivery_timestamp(text) -%}
    try_strptime(
        {{ text }},
        ['%Y%m%dT%H%M%SZ', '%Y%m%dT%H%M%S', '%Y-%m-%dT%H:%M:%SZ', '%Y-%m-%dT%H:%M:%S', '%Y%m%d%H%M']
    )
{%- endmacro %}

{% macro spark__parse_delivery_timestamp(text) -%}
    coalesce(
        {%- for format in ["yyyyMMdd'T'HHmmss'Z'", "yyyyMMdd'T'HHmmss", "yyyy-MM-dd'T'HH:mm:ss'Z'",
                           "yyyy-MM-dd'T'HH:mm:ss", "yyyyMMddHHmm"] %}
        try_to_timestamp({{ text }}, "{{ format }}"){{ "," if not loop.last }}
        {%- endfor %}
    )
{%- endmacro %}

{#- A list (DuckDB) / array (Spark) of the given SQL expressions. -#}
{% macro array_of(items) -%}
    {{ return(adapter.dispatch('array_of', 'gpucost')(items)) }}
{%- endmacro %}

{% macro default__array_of(items) -%}[{{ items | join(', ') }}]{%- endmacro %}

{% macro spark__array_of(items) -%}array({{ items | join(', ') }}){%- endmacro %}

{#- The columns of a built relation, comma-separated (optionally qualified), without those in `exclude`: a
    portable `* exclude (...)` (DuckDB) / `* except (...)` (Databricks), which plain Spark SQL lacks. `*`
    while parsing. -#}
{% macro column_list(relation, qualifier=none, exclude=[]) -%}
    {%- if not execute -%}{{ return('*') }}{%- endif -%}
    {%- set names = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) if column.name | lower not in exclude -%}
        {%- do names.append((qualifier ~ '.' if qualifier else '') ~ column.name) -%}
    {%- endfor -%}
    {#- not built yet (compiling or linting an empty warehouse): a star keeps the SQL parseable -#}
    {{ return(names | join(', ') if names else (qualifier ~ '.*' if qualifier else '*')) }}
{%- endmacro %}

{#- dbt-spark 1.11's dateadd multiplies the interval unparenthesised (`cast(row_number() over (order by 1) - 1
    * 3600 as int)`), so dbt.date_spine by the hour stepped by seconds from 23:00:01 the day before. The same
    maths with the interval in parentheses (and a bigint, not an int, of seconds). -#}
{% macro spark__dateadd(datepart, interval, from_date_or_timestamp) -%}
    {%- set months = {'month': 1, 'quarter': 3, 'year': 12} -%}
    {%- set days = {'day': 1, 'week': 7} -%}
    {%- set seconds = {'hour': 3600, 'minute': 60, 'second': 1} -%}
    {%- set clock -%}
        (to_unix_timestamp(to_timestamp({{ from_date_or_timestamp }})) - to_unix_timestamp(date({{ from_date_or_timestamp }})))
    {%- endset -%}
    {%- if datepart in days -%}
        to_timestamp(to_unix_timestamp(
            date_add(date({{ from_date_or_timestamp }}), cast(({{ interval }}) * {{ days[datepart] }} as int))
        ) + {{ clock }})
    {%- elif datepart in months -%}
        to_timestamp(to_unix_timestamp(
            add_months(date({{ from_date_or_timestamp }}), cast(({{ interval }}) * {{ months[datepart] }} as int))
        ) + {{ clock }})
    {%- elif datepart in seconds -%}
        to_timestamp(
            to_unix_timestamp({{ from_date_or_timestamp }}) + cast(({{ interval }}) * {{ seconds[datepart] }} as bigint)
        )
    {%- else -%}
        {{ exceptions.raise_compiler_error("dateadd: datepart '" ~ datepart ~ "' is not implemented on spark") }}
    {%- endif -%}
{%- endmacro %}
