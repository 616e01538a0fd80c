{#- The landing zone on Spark (the `spark` target, docs/spark.md): the same readers as landing.sql, on Spark's
    own file sources. Each reader registers a session temporary view over the landed files (CSV with a
    header, Prometheus JSON with an explicit schema, Parquet) and selects from it, so the models above
    see the columns the DuckDB readers return. Files are listed with Spark's binaryFile source; a file
    landed twice (same bytes) is read once, as on DuckDB. Formats not read here (native bills, Slurm
    dumps) stop the build with a clear message when such files are present, rather than being skipped. -#}

{#- Landed files whose path (relative to the landing dir) matches a DuckDB-style glob: ** spans folders. -#}
{% macro spark__landing_files(relative_glob, include_refused=false) -%}
    {%- set root = landing_dir() | replace('\\', '/') -%}
    {%- set regex = glob_regex(relative_glob) -%}
    {%- set listed = run_query("select path from " ~ spark_landed_files_view()) -%}
    {%- set files = [] -%}
    {%- if listed is not none -%}
        {%- for path in listed.columns[0].values() -%}
            {%- set local = modules.re.sub('^file:(//)?', '', path) -%}
            {%- set relative = local[(local.find(root ~ '/') + root | length + 1):] if (root ~ '/') in local else none -%}
            {%- if relative is not none and modules.re.fullmatch(regex, relative) -%}
                {%- do files.append(local) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(files | sort) }}
{%- endmacro %}

{#- A session temporary view over every landed file (binaryFile: path, modificationTime, length, content;
    content is only read when selected). Returns its name. -#}
{% macro spark_landed_files_view() -%}
    {%- do run_query(
        "create or replace temporary view gpucost_landed_files using binaryFile options (path '"
        ~ landing_dir() ~ "', recursiveFileLookup 'true')"
    ) -%}
    {{ return('gpucost_landed_files') }}
{%- endmacro %}

{#- A DuckDB glob as a Python regex over relative paths: `**/` any folders (or none), `*` within one name. -#}
{% macro glob_regex(glob) -%}
    {%- set out = [] -%}
    {%- set parts = glob.split('**/') -%}
    {%- for part in parts -%}
        {%- do out.append(modules.re.escape(part).replace('\\*', '[^/]*').replace('\\?', '[^/]')) -%}
    {%- endfor -%}
    {{ return(out | join('(?:.*/)?')) }}
{%- endmacro %}

{#- Bytes-distinct files, as default__distinct_content_files: md5 of the content, empty files skipped,
    a text file that is not UTF-8 stops the build with its name. -#}
{% macro spark__distinct_content_files(files) -%}
    {%- set quoted = [] -%}
    {%- for file in files -%}{%- do quoted.append("'" ~ file | replace("'", "\\'") ~ "'") -%}{%- endfor -%}
    {%- set root = landing_dir() | replace('\\', '/') -%}
    {%- set result = run_query(
        "select regexp_replace(path, '^file:(//)?', '') as filename, md5(content) as content_md5, length,"
        ~ " path not like '%.gz' and path not like '%.parquet' and not is_valid_utf8(content) as is_not_utf8"
        ~ " from " ~ spark_landed_files_view() ~ " where regexp_replace(path, '^file:(//)?', '') in ("
        ~ quoted | join(', ') ~ ") order by filename"
    ) -%}
    {%- set seen = [] -%}
    {%- set kept = [] -%}
    {%- set not_utf8 = [] -%}
    {%- for row in result.rows -%}
        {%- if row[3] and row[2] > 0 -%}
            {%- do not_utf8.append(row[0]) -%}
        {%- elif row[2] > 0 and row[1] not in seen -%}
            {%- do seen.append(row[1]) -%}
            {%- do kept.append(row[0]) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not_utf8 -%}
        {{ exceptions.raise_compiler_error(
            "These landed files are not UTF-8 encoded: " ~ not_utf8 | join(", ")
            ~ ". Re-export them as UTF-8 (or convert, e.g. iconv -f latin1 -t utf-8 in.csv > out.csv)."
        ) }}
    {%- endif -%}
    {{ return(kept) }}
{%- endmacro %}

{#- A session temporary view over one landed file; returns its name and its columns. -#}
{% macro spark_file_view(file, format, schema=none, options={}) -%}
    {%- set name = 'landing_' ~ local_md5(file ~ format) -%}
    {%- set option_sql = [] -%}
    {%- for key, value in options.items() -%}{%- do option_sql.append(key ~ " '" ~ value ~ "'") -%}{%- endfor -%}
    {%- do option_sql.append("path '" ~ file | replace("'", "\\'") ~ "'") -%}
    {%- do run_query(
        "create or replace temporary view " ~ name ~ (" (" ~ schema ~ ")" if schema else "")
        ~ " using " ~ format ~ " options (" ~ option_sql | join(', ') ~ ")"
    ) -%}
    {%- set columns = run_query("select * from " ~ name ~ " limit 0").column_names | list -%}
    {{ return({'name': name, 'columns': columns}) }}
{%- endmacro %}

{#- A landed text field: null for both spellings of null in real exports (empty, the literal NULL). -#}
{% macro spark_text(column) -%}
    case when trim({{ quote_identifier(column) }}) in ('', 'NULL') then null else {{ quote_identifier(column) }} end
{%- endmacro %}

{#- Bill files (CSV, gzip CSV, Parquet) as text, every name in `columns` present, extra columns kept
    (union by name across files), each row with its file and data row number. Only the files
    stg_landing__bill_files accepted are read (as on DuckDB). -#}
{% macro spark__read_bill_files(relative_dir, columns) -%}
    {%- set files = bill_files_to_read(relative_dir.split('/')[-1]) -%}
    {%- set views = [] -%}
    {%- for file in files -%}
        {%- if (file | lower).endswith('.parquet') -%}
            {%- do views.append(spark_file_view(file, 'parquet')) -%}
        {%- else -%}
            {%- do views.append(spark_file_view(file, 'csv', options={'header': 'true', 'multiLine': 'true', 'escape': '"'})) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set all_columns = columns | list -%}
    {%- for view in views -%}
        {%- for column in view.columns if column not in all_columns -%}{%- do all_columns.append(column) -%}{%- endfor -%}
    {%- endfor -%}
    select
        {% for column in all_columns -%}
        cast(null as string) as {{ quote_identifier(column) }},
        {% endfor -%}
        cast(null as string) as filename,
        cast(null as bigint) as source_row_number
    where false
    {%- for view in views %}
    union all
    select
        {% for column in all_columns -%}
        {%- if column in view.columns -%}
        {{ spark_text(column) }} as {{ quote_identifier(column) }},
        {%- else -%}
        cast(null as string) as {{ quote_identifier(column) }},
        {%- endif %}
        {% endfor -%}
        regexp_replace(input_file_name(), '^file:(//)?', '') as filename,
        row_number() over (order by monotonically_increasing_id()) as source_row_number
    from {{ view.name }}
    {%- endfor %}
{%- endmacro %}

{#- As default__landed_file_checks, from Spark's binaryFile source. -#}
{% macro spark__landed_file_checks(files) -%}
    {%- set result = run_query(
        "select regexp_replace(path, '^file:(//)?', '') as filename, length,"
        ~ " length >= 2 and substring(content, 1, 2) = X'1F8B' as is_gzip,"
        ~ " length >= 8 and substring(content, 1, 4) = X'50415231'"
        ~ " and substring(content, length - 3, 4) = X'50415231' as is_parquet,"
        ~ " not is_valid_utf8(content) as is_not_utf8"
        ~ " from " ~ spark_landed_files_where(files)
    ) -%}
    {{ return(landed_file_problems(result.rows)) }}
{%- endmacro %}

{% macro spark__landed_file_columns(file) -%}
    {%- if (file | lower).endswith('.parquet') -%}
        {{ return(spark_file_view(file, 'parquet').columns) }}
    {%- endif -%}
    {{ return(spark_file_view(file, 'csv', options={'header': 'true', 'multiLine': 'true', 'escape': '"'}).columns) }}
{%- endmacro %}

{% macro spark__landed_texts(files) -%}
    {%- set result = run_query(
        "select regexp_replace(path, '^file:(//)?', '') as filename, cast(content as string)"
        ~ " from " ~ spark_landed_files_where(files) ~ " order by 1"
    ) -%}
    {{ return(result.rows) }}
{%- endmacro %}

{#- On spark the telemetry staging tables are rebuilt from every landed file on each run (incremental over
    files needs delete+insert, which is DuckDB's; merge needs Delta): every file is to load, none is removed. -#}
{% macro spark__prometheus_files_to_load(relative_dir) -%}
    {{ return(landing_files(relative_dir ~ '/**/*')) }}
{%- endmacro %}

{% macro spark__remove_unlanded_prometheus_files(relative_dir) -%}
    select 1
{%- endmacro %}

{#- The deepest folder holding all the given files. -#}
{% macro common_dir(files) -%}
    {%- set first = files[0].split('/')[:-1] -%}
    {%- set common = namespace(depth=first | length) -%}
    {%- for file in files -%}
        {%- set parts = file.split('/')[:-1] -%}
        {%- for i in range(common.depth) -%}
            {%- if i < common.depth and (i >= parts | length or parts[i] != first[i]) -%}
                {%- set common.depth = i -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(first[:common.depth] | join('/')) }}
{%- endmacro %}

{#- One row per series of each given telemetry file, as default__read_prometheus_series: the file with its size
    and modification time (Spark's _metadata), the labels as a map, the samples as [time, value] text pairs
    (an instant query's vector: its one sample), and a file_quarantine_reason on the one row of a file that
    yields no series. JSON responses (.json, .json.gz) are read with an explicit schema, one response per
    file; a response Spark cannot parse comes back as nulls. Exposition text / OpenMetrics files are parsed
    by prometheus-client on the duckdb target only: here they are quarantined with that reason. -#}
{% macro spark__read_prometheus_series(files) -%}
    {%- if files %}
    {%- set json_files = [] -%}
    {%- for file in files if prometheus_file_format(file) in ('json', 'json_gz') -%}{%- do json_files.append(file) -%}{%- endfor -%}
    {%- if json_files %}
    {%- set name = 'landing_' ~ local_md5(files | join('|')) -%}
    {%- do run_query(
        "create or replace temporary view " ~ name
        ~ " (status string, errorType string, error string, data struct<resultType: string,"
        ~ " result: array<struct<metric: map<string, string>, `values`: array<array<string>>, value: array<string>>>>)"
        ~ " using json options (path '" ~ common_dir(json_files) | replace("'", "\\'") ~ "', recursiveFileLookup 'true',"
        ~ " pathGlobFilter '*.{json,json.gz}', multiLine 'true')"
    ) -%}
    {%- endif %}
    with

    landed as (

        select
            filename,
            size as source_file_size,
            last_modified as source_file_modified_at
        from ({{ spark__landed_file_metadata(files) }}) as landed_files

    ),

    responses as (

        {%- if json_files %}
        select
            regexp_replace(input_file_name(), '^file:(//)?', '') as filename,
            status,
            errorType as error_type,
            error,
            data.resultType as result_type,
            data.result as result
        from {{ name }}
        {%- else %}
        select
            cast(null as string) as filename,
            cast(null as string) as status,
            cast(null as string) as error_type,
            cast(null as string) as error,
            cast(null as string) as result_type,
            cast(null as array<struct<metric: map<string, string>, `values`: array<array<string>>, value: array<string>>>)
                as result
        where false
        {%- endif %}

    ),

    checked as (

        select
            landed.filename,
            landed.source_file_size,
            landed.source_file_modified_at,
            responses.result_type,
            responses.result,
            case
                when landed.source_file_size = 0 then 'empty file (0 bytes)'
                when {{ prometheus_text_file_sql('landed.filename') }}
                    then 'exposition text / OpenMetrics is read on the duckdb target only (docs/telemetry-inputs.md)'
                when not {{ regexp_search() }}(lower(landed.filename), '[.]json([.]gz)?$')
                    then 'unknown telemetry file type (expected .json, .json.gz, .prom, .txt or .om)'
                when responses.status is null and responses.result is null
                    then 'unparseable JSON (truncated, or not JSON)'
                else {{ prometheus_response_reason(
                    'responses.status', 'responses.error_type', 'responses.error',
                    'responses.result_type', 'responses.result'
                ) }}
            end as file_quarantine_reason
        from landed
        left join responses on landed.filename = responses.filename

    ),

    series as (

        select
            filename,
            source_file_size,
            source_file_modified_at,
            result_type,
            file_quarantine_reason,
            explode_outer(case when file_quarantine_reason is null then result end) as series
        from checked

    )

    select
        filename,
        source_file_size,
        source_file_modified_at,
        series.metric as labels,
        case when result_type = 'vector' then array(series.value) else series.`values` end as samples,
        file_quarantine_reason
    from series
    {%- else %}
    select
        cast(null as string) as filename,
        cast(null as bigint) as source_file_size,
        cast(null as timestamp) as source_file_modified_at,
        cast(null as map<string, string>) as labels,
        cast(null as array<array<string>>) as samples,
        cast(null as string) as file_quarantine_reason
    where false
    {%- endif %}
{%- endmacro %}

{#- An optional reference CSV: its rows, or none, with the given text columns. -#}
{% macro spark__read_optional_csv(relative_glob, columns) -%}
    {%- set files = landing_files(relative_glob) -%}
    {%- set views = [] -%}
    {%- for file in files -%}
        {%- do views.append(spark_file_view(file, 'csv', options={'header': 'true', 'multiLine': 'true', 'escape': '"'})) -%}
    {%- endfor -%}
    {%- set all_columns = columns | list -%}
    {%- for view in views -%}
        {%- for column in view.columns if column not in all_columns -%}{%- do all_columns.append(column) -%}{%- endfor -%}
    {%- endfor -%}
    select
        {% for column in all_columns -%}
        cast(null as string) as `{{ column }}`,
        {% endfor -%}
        cast(null as string) as filename
    where false
    {%- for view in views %}
    union all
    select
        {% for column in all_columns -%}
        {%- if column in view.columns -%}{{ spark_text(column) }}{%- else -%}cast(null as string){%- endif %} as `{{ column }}`,
        {% endfor -%}
        regexp_replace(input_file_name(), '^file:(//)?', '') as filename
    from {{ view.name }}
    {%- endfor %}
{%- endmacro %}

{#- Landed formats the spark target does not read yet: empty when absent, a clear error when present. -#}
{% macro spark_unsupported_landing(relative_dir, what) -%}
    {%- set files = landing_files(relative_dir ~ '/**/*') -%}
    {%- if files -%}
        {{ exceptions.raise_compiler_error(
            what ~ " are not read on the spark target (docs/spark.md): " ~ files[:3] | join(", ")
            ~ (" ..." if files | length > 3 else "") ~ ". Build them with the duckdb target, or land FOCUS exports."
        ) }}
    {%- endif -%}
{%- endmacro %}

{#- Slurm sacct dumps (as default__read_slurm_sacct): each bytes-distinct file read whole as text, split into
    lines (line numbers from 1); a first line of field names is the header, else every line is a record under
    var gpucost_slurm_sacct_fields (a --noheader dump). `sacct --json` files are read on the duckdb target
    only: here each is one quarantined row with that reason. -#}
{% macro spark__read_slurm_sacct(relative_dir) -%}
    {%- set files = distinct_content_files(landing_files(relative_dir ~ '/**/*')) -%}
    {%- set noheader_fields = var('gpucost_slurm_sacct_fields') | map('lower') | list -%}
    {%- if files %}
    {%- set name = 'landing_' ~ local_md5(files | join('|')) -%}
    {%- do run_query(
        "create or replace temporary view " ~ name ~ " using text options (path '" ~ common_dir(files)
        ~ "', recursiveFileLookup 'true', wholetext 'true')"
    ) -%}
    with

    files as (

        select
            regexp_replace(input_file_name(), '^file:(//)?', '') as filename,
            split(replace(value, chr(13), ''), chr(10), -1) as lines,
            left(ltrim(value), 1) = chr(123) as is_json
        from {{ name }}

    ),

    numbered as (

        select
            filename,
            posexplode(lines) as (line_index, line)
        from files
        where not is_json and filename in (
            {%- for file in files %}'{{ file }}'{{ ", " if not loop.last }}{% endfor -%}
        )

    ),

    headers as (

        select
            filename,
            forall(split(line, '[|]', -1), field -> trim(field) rlike '^[A-Za-z][A-Za-z0-9_]*$') as is_header,
            case
                when forall(split(line, '[|]', -1), field -> trim(field) rlike '^[A-Za-z][A-Za-z0-9_]*$')
                    then transform(split(line, '[|]', -1), h -> lower(trim(h)))
                else array({%- for field in noheader_fields %}'{{ field }}'{{ ", " if not loop.last }}{% endfor -%})
            end as header
        from numbered
        where line_index = 0

    ),

    text_lines as (

        select
            numbered.filename,
            cast(numbered.line_index + 1 as bigint) as source_row_number,
            headers.header,
            split(numbered.line, '[|]', -1) as fields,
            numbered.line,
            cast(null as string) as file_quarantine_reason
        from numbered
        inner join headers on numbered.filename = headers.filename
        where (numbered.line_index > 0 or not headers.is_header) and trim(numbered.line) <> ''

    ),

    json_files as (

        select
            filename,
            cast(null as bigint) as source_row_number,
            cast(null as array<string>) as header,
            cast(null as array<string>) as fields,
            cast(null as string) as line,
            'sacct --json is read on the duckdb target only (docs/telemetry-inputs.md)' as file_quarantine_reason
        from files
        where is_json and filename in (
            {%- for file in files %}'{{ file }}'{{ ", " if not loop.last }}{% endfor -%}
        )

    )

    select * from text_lines
    union all
    select * from json_files
    {%- else %}
    select
        cast(null as string) as filename,
        cast(null as bigint) as source_row_number,
        cast(null as array<string>) as header,
        cast(null as array<string>) as fields,
        cast(null as string) as line,
        cast(null as string) as file_quarantine_reason
    where false
    {%- endif %}
{%- endmacro %}

{#- The native bill formats' staging is not built on spark (dbt_project.yml): landed native bills stop it. -#}
{% macro spark_check_native_bills() -%}
    {%- if execute and target.type == 'spark' -%}
        {%- do spark_unsupported_landing('billing/aws_cur', 'AWS CUR reports') -%}
        {%- do spark_unsupported_landing('billing/azure', 'Azure cost details') -%}
        {%- do spark_unsupported_landing('billing/gcp', 'GCP billing exports') -%}
        {%- do spark_unsupported_landing('billing/oci', 'OCI cost reports') -%}
    {%- endif -%}
{%- endmacro %}

{#- Landed files' metadata and content hashes from Spark's binaryFile source (content read only for md5). -#}
{% macro spark_landed_files_where(files) -%}
    {{ spark_landed_files_view() }}
    where regexp_replace(path, '^file:(//)?', '') in (
        {%- for file in files %}{{ quote_text(file) }}{{ ", " if not loop.last }}{% endfor -%}
    )
{%- endmacro %}

{% macro spark__landed_file_metadata(files) -%}
    select
        regexp_replace(path, '^file:(//)?', '') as filename,
        length as size,
        date_trunc('SECOND', modificationTime) as last_modified
    from {{ spark_landed_files_where(files) }}
{%- endmacro %}

{% macro spark__landed_file_md5(files) -%}
    select
        regexp_replace(path, '^file:(//)?', '') as filename,
        md5(content) as content_md5
    from {{ spark_landed_files_where(files) }}
{%- endmacro %}

{#- Pod specs on spark (as default__kube_pod_spec_types / default__read_kube_pod_lists): a JSON view with an
    explicit schema over the snapshot files' folder, one row per pod object of a Pod List. -#}
{% macro spark__kube_pod_spec_types() -%}
    {%- set containers = 'array<struct<name: string, image: string, command: array<string>, args: array<string>,'
        ~ ' workingDir: string>>' -%}
    {%- set volumes = 'array<struct<name: string, persistentVolumeClaim: struct<claimName: string>>>' -%}
    {{ return({
        'containers': containers,
        'volumes': volumes,
        'annotations': 'map<string, string>',
        'pod': 'struct<metadata: struct<name: string, namespace: string, uid: string,'
            ~ ' annotations: map<string, string>>, spec: struct<containers: '
            ~ containers ~ ', volumes: ' ~ volumes ~ '>>',
    }) }}
{%- endmacro %}

{% macro spark__read_kube_pod_lists(files) -%}
    {%- set name = 'landing_' ~ local_md5(files | join('|')) -%}
    {%- do run_query(
        "create or replace temporary view " ~ name
        ~ " (kind string, items array<" ~ kube_pod_spec_types().pod ~ ">)"
        ~ " using json options (path '" ~ common_dir(files) ~ "', recursiveFileLookup 'true',"
        ~ " pathGlobFilter '*.{json,json.gz}', multiLine 'true')"
    ) -%}
    select
        filename,
        explode(items) as pod_object
    from (
        select
            regexp_replace(input_file_name(), '^file:(//)?', '') as filename,
            kind,
            items
        from {{ name }}
    ) as snapshots
    where
        kind in ('List', 'PodList')
        and filename in (
            {%- for file in files %}'{{ file }}'{{ ", " if not loop.last }}{% endfor -%}
        )
{%- endmacro %}
