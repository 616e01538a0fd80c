{#- Slurm accounting dumps: `sacct --parsable2` output (a header line, then `|`-separated fields, no quoting),
    one row per line with the header it sits under. Files are read as text and split here rather than by
    read_csv, so a line whose free text (SubmitLine, Comment) holds a `|` is kept and quarantined with a
    reason instead of failing the build or being skipped. -#}
{% macro read_slurm_sacct(relative_dir) -%}
    {{ return(adapter.dispatch('read_slurm_sacct', 'gpucost')(relative_dir)) }}
{%- endmacro %}

{% macro default__read_slurm_sacct(relative_dir) -%}
    {%- set files = distinct_content_files(landing_files(relative_dir ~ '/**/*')) -%}
    {%- if files %}
    with

    files as (

        select
            filename,
            string_split(replace(content, chr(13), ''), chr(10)) as lines
        from read_text({{ sql_string_list(files) }})

    ),

    numbered as (

        select
            filename,
            unnest(lines) as line,
            unnest(generate_series(1, len(lines))) as line_number
        from files

    ),

    headers as (

        select
            filename,
            list_transform(string_split(line, '|'), lambda h: lower(trim(h))) as header
        from numbered
        where line_number = 1

    )

    select
        numbered.filename,
        numbered.line_number as source_row_number,
        headers.header,
        string_split(numbered.line, '|') as fields,
        numbered.line
    from numbered
    inner join headers on numbered.filename = headers.filename
    where numbered.line_number > 1 and trim(numbered.line) <> ''
    {%- else %}
    select
        cast(null as string) as filename,
        cast(null as bigint) as source_row_number,
        cast(null as string[]) as header,
        cast(null as string[]) as fields,
        cast(null as string) as line
    where false
    {%- endif %}
{%- endmacro %}

{#- A field of a sacct line by its header name (case-insensitive); null when the dump lacks the column
    and for empty fields. -#}
{% macro sacct_field(name) -%}
    {{ return(adapter.dispatch('sacct_field', 'gpucost')(name)) }}
{%- endmacro %}

{% macro default__sacct_field(name) -%}
    nullif(trim(fields[list_position(header, '{{ name | lower }}')]), '')
{%- endmacro %}

{#- array_position is 0 when absent, and element_at(..., 0) is an error on Spark -#}
{% macro spark__sacct_field(name) -%}
    nullif(trim(case
        when array_position(header, '{{ name | lower }}') > 0
            then element_at(fields, cast(array_position(header, '{{ name | lower }}') as int))
    end), '')
{%- endmacro %}

{#- Slurm prints times in the controller's local time without an offset; Unknown / None mean not yet. -#}
{% macro sacct_timestamp(text) -%}
    {{ return(adapter.dispatch('sacct_timestamp', 'gpucost')(text)) }}
{%- endmacro %}

{% macro spark__sacct_timestamp(text) -%}
    to_utc_timestamp(
        try_cast(case when {{ text }} not in ('Unknown', 'None') then replace({{ text }}, 'T', ' ') end as timestamp),
        '{{ var("gpucost_slurm_timezone") }}'
    )
{%- endmacro %}

{% macro default__sacct_timestamp(text) -%}
    cast(
        try_cast(
            case when {{ text }} not in ('Unknown', 'None') then replace({{ text }}, 'T', ' ') end as timestamp
        ) at time zone '{{ var("gpucost_slurm_timezone") }}' at time zone 'UTC'
    as timestamp)
{%- endmacro %}

{#- A TRES count from AllocTRES, e.g. tres_count('alloc_tres', 'cpu') on 'billing=32,cpu=32,...'. -#}
{% macro sacct_tres(tres, key) -%}
    try_cast(regexp_extract({{ tres }}, '(^|,){{ key }}=([0-9]+)', 2) as bigint)
{%- endmacro %}

{#- Named capture groups of a regular expression as a struct read with ['name'] (DuckDB's regexp_extract with a
    list of names; on Spark one regexp_extract per group). A group that did not match is ''. -#}
{% macro regexp_groups(text, pattern, names) -%}
    {{ return(adapter.dispatch('regexp_groups', 'gpucost')(text, pattern, names)) }}
{%- endmacro %}

{% macro default__regexp_groups(text, pattern, names) -%}
    regexp_extract({{ text }}, '{{ pattern }}', [{% for name in names %}'{{ name }}'{{ ", " if not loop.last }}{% endfor %}])
{%- endmacro %}

{% macro spark__regexp_groups(text, pattern, names) -%}
    {%- set fields = [] -%}
    {%- for name in names -%}
        {%- do fields.append((name, "regexp_extract(" ~ text ~ ", '" ~ pattern ~ "', " ~ loop.index ~ ")")) -%}
    {%- endfor -%}
    {{ struct_of(fields) }}
{%- endmacro %}

{#- Text split on one character (every piece kept, empty ones too). Spark's split takes a regular expression:
    the character goes in a class. -#}
{% macro split_on(text, character) -%}
    {{ return(adapter.dispatch('split_on', 'gpucost')(text, character)) }}
{%- endmacro %}

{% macro default__split_on(text, character) -%}string_split({{ text }}, '{{ character }}'){%- endmacro %}

{% macro spark__split_on(text, character) -%}split({{ text }}, '[{{ character }}]', -1){%- endmacro %}

{#- A timestamp plus a number of seconds. -#}
{% macro add_seconds(timestamp, seconds) -%}
    {{ return(adapter.dispatch('add_seconds', 'gpucost')(timestamp, seconds)) }}
{%- endmacro %}

{% macro default__add_seconds(timestamp, seconds) -%}{{ timestamp }} + to_seconds({{ seconds }}){%- endmacro %}

{% macro spark__add_seconds(timestamp, seconds) -%}timestampadd(second, {{ seconds }}, {{ timestamp }}){%- endmacro %}

{#- A quotient DuckDB computes as a double (a decimal divided by an integer): the same double on Spark,
    whose decimal division keeps only 6 fractional digits. -#}
{% macro double_quotient(numerator, denominator) -%}
    {{ return(adapter.dispatch('double_quotient', 'gpucost')(numerator, denominator)) }}
{%- endmacro %}

{% macro default__double_quotient(numerator, denominator) -%}{{ numerator }} / {{ denominator }}{%- endmacro %}

{% macro spark__double_quotient(numerator, denominator) -%}
    cast({{ numerator }} as double) / {{ denominator }}
{%- endmacro %}
