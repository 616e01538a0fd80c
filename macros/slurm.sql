{#- Slurm accounting dumps under <landing>/scheduler/slurm/<cluster>/, each read as it is, detected by its
    content rather than its name:
    - `sacct --json` (Slurm 21.08+; a JSON object with a `jobs` list): one row per job allocation, its fields
      written as the parsable2 columns below (times in the controller's zone, like sacct's text);
    - `sacct --parsable2` text with a header line (its first line is all field names);
    - `sacct --parsable2 --noheader` text: every line is a record, under the field list of var
      gpucost_slurm_sacct_fields (default: the --format list XDMoD tells sites to use).
    Text is split here rather than by read_csv, so a line whose free text (SubmitLine, Comment, JobName) holds a
    `|` is kept and quarantined with a reason instead of failing the build or being skipped. A file that cannot
    be read (JSON that does not parse, or holds no jobs list) gives one row with file_quarantine_reason. -#}
{% macro read_slurm_sacct(relative_dir) -%}
    {{ return(adapter.dispatch('read_slurm_sacct', 'gpucost')(relative_dir)) }}
{%- endmacro %}

{#- The columns a `sacct --json` job is written as (sacct_json_fields) and the fields a header line may hold. -#}
{% macro sacct_json_header() -%}
    {{ return(['jobid', 'jobidraw', 'jobname', 'user', 'account', 'partition', 'cluster', 'submit', 'start', 'end',
        'elapsedraw', 'alloctres', 'nodelist', 'state', 'workdir', 'submitline']) }}
{%- endmacro %}

{#- A time of a sacct --json job (epoch seconds, or {"set", "number"} from Slurm 23.02) as sacct prints it:
    the controller's local time, `Unknown` when not set (0). -#}
{% macro sacct_json_time(job, path) -%}
    {%- set epoch -%}
        try_cast(coalesce(
            json_extract_string({{ job }}, '{{ path }}.number'), json_extract_string({{ job }}, '{{ path }}')
        ) as bigint)
    {%- endset -%}
    case
        when {{ epoch }} > 0
            then strftime(timezone('{{ var("gpucost_slurm_timezone") }}', to_timestamp({{ epoch }})), '%Y-%m-%dT%H:%M:%S')
        else 'Unknown'
    end
{%- endmacro %}

{#- A number of a sacct --json job that Slurm 23.02+ writes as {"set", "number"} and older releases as a number. -#}
{% macro sacct_json_number(job, path) -%}
    coalesce(json_extract_string({{ job }}, '{{ path }}.number'), json_extract_string({{ job }}, '{{ path }}'))
{%- endmacro %}

{#- The fields of a sacct --json job in the order of sacct_json_header(). -#}
{% macro sacct_json_fields(job) -%}
    {%- set job_id = "json_extract_string(" ~ job ~ ", '$.job_id')" -%}
    {%- set array_job = sacct_json_number(job, '$.array.job_id') -%}
    {%- set array_task = sacct_json_number(job, '$.array.task_id') -%}
    {%- set het_job = sacct_json_number(job, '$.het.job_id') -%}
    {%- set het_offset = sacct_json_number(job, '$.het.job_offset') -%}
    [
        case
            when try_cast({{ array_job }} as bigint) > 0 and try_cast({{ array_task }} as bigint) is not null
                then {{ array_job }} || '_' || {{ array_task }}
            when try_cast({{ het_job }} as bigint) > 0 and try_cast({{ het_offset }} as bigint) is not null
                then {{ het_job }} || '+' || {{ het_offset }}
            else {{ job_id }}
        end,
        {{ job_id }},
        json_extract_string({{ job }}, '$.name'),
        coalesce(json_extract_string({{ job }}, '$.user'), json_extract_string({{ job }}, '$.association.user')),
        json_extract_string({{ job }}, '$.account'),
        json_extract_string({{ job }}, '$.partition'),
        json_extract_string({{ job }}, '$.cluster'),
        {{ sacct_json_time(job, '$.time.submit') }},
        {{ sacct_json_time(job, '$.time.start') }},
        {{ sacct_json_time(job, '$.time.end') }},
        {{ sacct_json_number(job, '$.time.elapsed') }},
        array_to_string(list_transform(
            from_json(
                coalesce(json_extract({{ job }}, '$.tres.allocated'), '[]'),
                '[{"type": "VARCHAR", "name": "VARCHAR", "count": "BIGINT"}]'
            ),
            lambda tres: tres.type || coalesce('/' || nullif(tres.name, ''), '') || '=' || tres.count
        ), ','),
        json_extract_string({{ job }}, '$.nodes'),
        coalesce(json_extract_string({{ job }}, '$.state.current[0]'), json_extract_string({{ job }}, '$.state.current')),
        json_extract_string({{ job }}, '$.working_directory'),
        json_extract_string({{ job }}, '$.submit_line')
    ]
{%- endmacro %}

{% macro default__read_slurm_sacct(relative_dir) -%}
    {%- set landed = landing_files(relative_dir ~ '/**/*') -%}
    {#- a file that is not text (compressed, binary) is quarantined here, not an error of distinct_content_files -#}
    {%- set not_text = [] -%}
    {%- if landed -%}
        {%- set result = run_query(
            "select filename from read_blob(" ~ sql_string_list(landed)
            ~ ") where size > 0 and try(decode(content)) is null order by 1"
        ) -%}
        {%- set not_text = result.columns[0].values() | list -%}
    {%- endif -%}
    {%- set files = distinct_content_files(landed | reject('in', not_text) | list) -%}
    {%- set noheader_fields = var('gpucost_slurm_sacct_fields') | map('lower') | list -%}
    {%- if files or not_text %}
    with

    files as (

        select
            cast(null as string) as filename,
            cast(null as string) as content,
            cast(null as boolean) as is_json
        where false
        {%- if files %}
        union all
        select
            filename,
            replace(content, chr(13), '') as content,
            left(ltrim(content, ' ' || chr(9) || chr(10) || chr(13)), 1) = chr(123) as is_json  -- `{`
        from read_text({{ sql_string_list(files) }})
        {%- endif %}

    ),

    text_files as (

        select
            filename,
            string_split(content, chr(10)) as lines
        from files
        where not is_json

    ),

    numbered as (

        select
            filename,
            unnest(lines) as line,
            unnest(generate_series(1, len(lines))) as line_number
        from text_files

    ),

    headers as (

        -- a header line is field names only (JobID|User|...); a first line that is a record (a job id first)
        -- means a --noheader dump, read under var gpucost_slurm_sacct_fields
        select
            filename,
            list_bool_and(list_transform(
                string_split(line, '|'), lambda field: regexp_matches(trim(field), '^[A-Za-z][A-Za-z0-9_]*$')
            )) as is_header,
            case
                when list_bool_and(list_transform(
                    string_split(line, '|'), lambda field: regexp_matches(trim(field), '^[A-Za-z][A-Za-z0-9_]*$')
                ))
                    then list_transform(string_split(line, '|'), lambda field: lower(trim(field)))
                else {{ sql_string_list(noheader_fields) }}
            end as header
        from numbered
        where line_number = 1

    ),

    text_lines as (

        select
            numbered.filename,
            numbered.line_number as source_row_number,
            headers.header,
            string_split(numbered.line, '|') as fields,
            numbered.line,
            cast(null as string) as file_quarantine_reason
        from numbered
        inner join headers on numbered.filename = headers.filename
        where (numbered.line_number > 1 or not headers.is_header) and trim(numbered.line) <> ''

    ),

    json_files as (

        select
            filename,
            case
                when not json_valid(content) then 'unparseable sacct --json file (truncated, or not JSON)'
                when json_type(content, '$.jobs') is distinct from 'ARRAY'
                    then 'sacct --json file without a jobs list'
            end as file_quarantine_reason,
            case when json_valid(content) then json_extract(content, '$.jobs') end as jobs
        from files
        where is_json

    ),

    json_jobs as (

        select
            filename,
            unnest(from_json(jobs, '["JSON"]')) as job,
            unnest(generate_series(1, cast(json_array_length(jobs) as bigint))) as job_number
        from json_files
        where file_quarantine_reason is null

    ),

    json_lines as (

        select
            filename,
            job_number as source_row_number,
            {{ sql_string_list(sacct_json_header()) }} as header,
            {{ sacct_json_fields('job') }} as fields,
            left(cast(job as string), 2000) as line,
            cast(null as string) as file_quarantine_reason
        from json_jobs

    ),

    unreadable_files as (

        select
            filename,
            cast(null as bigint) as source_row_number,
            cast(null as string[]) as header,
            cast(null as string[]) as fields,
            cast(null as string) as line,
            file_quarantine_reason
        from json_files
        where file_quarantine_reason is not null
        {%- for file in not_text %}
        union all
        select
            '{{ file | replace("'", "''") }}',
            null,
            null,
            null,
            null,
            'not UTF-8 text (a compressed or binary file?): land sacct output as plain text'
        {%- endfor %}

    )

    select * from text_lines
    union all
    select * from json_lines
    union all
    select * from unreadable_files
    {%- else %}
    select
        cast(null as string) as filename,
        cast(null as bigint) as source_row_number,
        cast(null as string[]) as header,
        cast(null as string[]) as fields,
        cast(null as string) as line,
        cast(null as string) as file_quarantine_reason
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
