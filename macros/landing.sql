{#- The landing zone: raw files exactly as the tools emit them, read in place by DuckDB.
    Every reader returns the same columns whether or not any file matches, so a fresh
    warehouse with an empty folder builds (to empty tables) instead of failing. -#}

{#- The landing zone's folder: var gpucost_landing_dir, else env GPUCOST_LANDING_DIR, else `landing` (relative to
    the project dir). Read here, not in dbt_project.yml, so that a build of another landing zone reparses only
    the files that read it (an env_var in dbt_project.yml makes dbt parse the whole project again). -#}
{% macro landing_dir() -%}
    {{- return(var('gpucost_landing_dir', env_var('GPUCOST_LANDING_DIR', 'landing'))) -}}
{%- endmacro %}

{% macro landing_path(relative) -%}
    {{- landing_dir() ~ '/' ~ relative -}}
{%- endmacro %}

{#- A literal path as a DuckDB glob matching only itself: each of [ * ? becomes a one-character class
    ([[], [*], [?]); a lone ] is literal in a glob. -#}
{% macro glob_escape(path) -%}
    {{- path | replace('[', '[[]') | replace('*', '[*]') | replace('?', '[?]') -}}
{%- endmacro %}

{#- One quoting rule for an identifier that comes from data (a landed column name): wrapped in double
    quotes, a double quote inside doubled (the SQL standard; DuckDB and Spark SQL's ANSI quoting alike
    are covered by the target's own adapter.quote on spark). Nothing a file names can end the quote. -#}
{% macro quote_identifier(name) -%}
    {{ return(adapter.dispatch('quote_identifier', 'gpucost')(name)) }}
{%- endmacro %}

{% macro default__quote_identifier(name) -%}
    {{- '"' ~ (name | string | replace('"', '""')) ~ '"' -}}
{%- endmacro %}

{% macro spark__quote_identifier(name) -%}
    {{- '`' ~ (name | string | replace('`', '``')) ~ '`' -}}
{%- endmacro %}

{#- A text literal from data: single quotes doubled (DuckDB); on Spark as spark_seed_literal writes one. -#}
{% macro quote_text(value) -%}
    {{ return(adapter.dispatch('quote_text', 'gpucost')(value)) }}
{%- endmacro %}

{% macro default__quote_text(value) -%}
    {{- "'" ~ (value | string | replace("'", "''")) ~ "'" -}}
{%- endmacro %}

{#- A parenthesised list of text literals from data (quote_text each), for `column in (...)`. -#}
{% macro quote_text_tuple(values) -%}
    ({%- for value in values -%}{{ quote_text(value) }}{{ ", " if not loop.last }}{%- endfor -%})
{%- endmacro %}

{#- Spark's string literals are raw on the spark target (profiles.yml): spark_seed_literal's rule. -#}
{% macro spark__quote_text(value) -%}
    {{- spark_seed_literal(value | string) -}}
{%- endmacro %}

{#- The files matching a glob under the landing zone (empty list while parsing). A file that is a symlink
    (or under a symlinked folder) whose target is outside the landing zone is never listed, so no reader
    opens it: rpt_quarantine lists it from stg_landing__links. stg_landing__bill_files asks for them
    (include_refused) to give each refused bill file its own row. -#}
{% macro landing_files(relative_glob, include_refused=false) -%}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {{ return(adapter.dispatch('landing_files', 'gpucost')(relative_glob, include_refused)) }}
{%- endmacro %}

{% macro default__landing_files(relative_glob, include_refused=false) -%}
    {#- the landing dir is a literal path: its [ ] * ? are escaped, only relative_glob is a pattern -#}
    {%- set pattern = glob_escape(landing_dir()) ~ '/' ~ relative_glob -%}
    {%- set refused = 'false' -%}
    {%- if not include_refused and outside_landing_check_available() -%}
        {%- set refused = 'gpucost_outside_landing(file, ' ~ quote_text(landing_dir()) ~ ')' -%}
    {%- endif -%}
    {%- set result = run_query(
        "select file from glob('" ~ pattern | replace("'", "''") ~ "') where not " ~ refused ~ " order by file"
    ) -%}
    {{ return(result.columns[0].values() | list) }}
{%- endmacro %}

{#- The symlink check is a Python function of the project's dbt-duckdb plugin (profiles.yml); a profile
    without the plugin lists every file, links out of the zone included, as before. -#}
{% macro outside_landing_check_available() -%}
    {%- set found = run_query(
        "select count(*) from duckdb_functions() where function_name = 'gpucost_outside_landing'"
    ).columns[0].values() -%}
    {{ return(found[0] > 0) }}
{%- endmacro %}

{#- Files with distinct bytes: a file landed twice (same content under another name, a re-sent export)
    is read once, the first by name; empty files hold no lines and are skipped. stg_landing__files lists
    every file and which one a duplicate repeats. A text file that is not UTF-8 stops the build with the
    file's name (DuckDB reads CSV as UTF-8; converting silently could change money). -#}
{% macro distinct_content_files(files) -%}
    {%- if not files -%}{{ return([]) }}{%- endif -%}
    {{ return(adapter.dispatch('distinct_content_files', 'gpucost')(files)) }}
{%- endmacro %}

{% macro default__distinct_content_files(files) -%}
    {%- set result = run_query(
        "select filename, md5(content) as content_md5, size,"
        ~ " filename not like '%.gz' and filename not like '%.parquet' and try(decode(content)) is null as is_not_utf8"
        ~ " from read_blob(" ~ sql_string_list(files) ~ ") order by filename"
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

{#- Landed files as a list literal of globs that match only themselves (glob_escape), so a file named
    with [ ] * ? is read as it is named. -#}
{% macro sql_file_list(files) -%}
    {%- set escaped = [] -%}
    {%- for file in files -%}{%- do escaped.append(glob_escape(file)) -%}{%- endfor -%}
    {{- sql_string_list(escaped) -}}
{%- endmacro %}

{% macro sql_string_list(values) -%}
    [{%- for value in values -%}'{{ value | replace("'", "''") }}'{{ ", " if not loop.last }}{%- endfor -%}]
{%- endmacro %}

{#- FOCUS exports (CSV and Parquet, 1.0 to 1.4) as text columns with every spec column present.
    Missing spec columns are null; extra columns are kept; nothing is typed yet (staging does it). -#}
{% macro read_focus_exports(relative_dir) -%}
    {{ read_bill_files(relative_dir, focus_columns()) }}
{%- endmacro %}

{#- The bill formats, each a folder under <landing>/billing/. -#}
{% macro bill_formats() -%}
    {{ return(['focus', 'aws_cur', 'azure', 'gcp', 'oci']) }}
{%- endmacro %}

{#- The landed data files of one bill format (its folder's CSV, gzip CSV, Parquet; for GCP also JSON lines),
    sorted; a provider's manifest (`*Manifest.json`, `manifest.json`) is metadata, never data. -#}
{% macro bill_data_files(format) -%}
    {%- set dir = 'billing/' ~ format -%}
    {%- set files = landing_files(dir ~ '/**/*.csv', true) + landing_files(dir ~ '/**/*.csv.gz', true)
        + landing_files(dir ~ '/**/*.parquet', true) -%}
    {%- if format == 'gcp' -%}
        {%- for extension in ['json', 'jsonl', 'json.gz', 'jsonl.gz'] -%}
            {%- for file in landing_files(dir ~ '/**/*.' ~ extension, true)
                if not modules.re.search('(?i)manifest[^/]*\\.json$', file) -%}
                {%- do files.append(file) -%}
            {%- endfor -%}
        {%- endfor -%}
    {%- endif -%}
    {{ return(files | unique | sort) }}
{%- endmacro %}

{#- The file types a bill format's folder reads, for messages. -#}
{% macro bill_file_types(format) -%}
    {{ return('.csv, .csv.gz, .parquet' ~ (', .json, .jsonl, .json.gz, .jsonl.gz' if format == 'gcp' else '')) }}
{%- endmacro %}

{#- The bill files a base model reads: those stg_landing__bill_files accepted (file_status 'read'). Every
    other landed bill file has a reason there, and in rpt_quarantine. Empty while parsing. -#}
{% macro bill_files_to_read(format) -%}
    {%- set relation = ref('stg_landing__bill_files') -%}
    {%- set links = ref('stg_landing__links') if target.type != 'spark' else none -%}
    {%- if not execute -%}{{ return([]) }}{%- endif -%}
    {%- if load_relation(relation) is none -%}
        {#- compiled before the landing model was built (dbt compile, sqlfluff): the same decision, made here -#}
        {%- set files = [] -%}
        {%- for fact in bill_landing_facts(links) if fact.bill_format == format and fact.file_status == 'read' -%}
            {%- do files.append(fact.source_file) -%}
        {%- endfor -%}
        {{ return(files) }}
    {%- endif -%}
    {%- set result = run_query(
        "select source_file from " ~ relation ~ " where bill_format = '" ~ format
        ~ "' and file_status = 'read' order by source_file"
    ) -%}
    {{ return(result.columns[0].values() | list) }}
{%- endmacro %}

{#- The columns a landed bill file of a format must have: the var gpucost_required_bill_columns (one
    definition, read by `gpucost validate` too). An entry `a|b` is met by either spelling (legacy CUR
    `lineItem/UnblendedCost` or CUR 2.0 `line_item_unblended_cost`). FOCUS files also need BillingCurrency
    unless gpucost_default_billing_currency declares it. -#}
{% macro required_bill_columns(format) -%}
    {%- set required = (var('gpucost_required_bill_columns', {}).get(format) or []) | list -%}
    {%- if format == 'focus' and not var('gpucost_default_billing_currency', none)
        and 'BillingCurrency' not in required -%}
        {%- do required.append('BillingCurrency') -%}
    {%- endif -%}
    {{ return(required) }}
{%- endmacro %}

{#- The column names a format's reader knows (and the required ones), for messages. -#}
{% macro known_bill_columns(format) -%}
    {%- set names = [] -%}
    {%- for entry in required_bill_columns(format) -%}{%- do names.extend(entry.split('|')) -%}{%- endfor -%}
    {%- if format == 'focus' -%}{%- do names.extend(focus_columns()) -%}
    {%- elif format == 'aws_cur' -%}{%- do names.extend(aws_cur_columns()) -%}
    {%- elif format == 'azure' -%}{%- do names.extend(azure_columns()) -%}
    {%- elif format == 'oci' -%}{%- do names.extend(oci_columns()) -%}
    {%- endif -%}
    {{ return(names) }}
{%- endmacro %}

{#- FOCUS datasets other than cost and usage, recognised by a column only they have. Such a file in the
    FOCUS folder is skipped with a note (not cost-and-usage money), never read as bill lines. -#}
{% macro other_focus_datasets() -%}
    {{ return({'ContractCommitmentId': 'FOCUS Contract Commitment dataset'}) }}
{%- endmacro %}

{#- What every landed bill file is, decided once (stg_landing__bill_files): a list of dicts with
    source_file, bill_format, file_status (read | empty | rejected | other_dataset), file_reason and its
    delivery (deliveries.sql, bill_deliveries). A file is rejected, with the reason, when it is not what its
    name says (gzip data named .csv, no Parquet magic), is not UTF-8 text, or lacks a required column; the
    build goes on with the others. -#}
{% macro bill_landing_facts(links=none, probes=none) -%}
    {%- set refused = outside_links(links) -%}
    {%- set unreadable = unreadable_files(probes) -%}
    {%- set facts = [] -%}
    {%- for format in bill_formats() -%}
        {%- set files = bill_data_files(format) -%}
        {%- set required = required_bill_columns(format) -%}
        {%- set inside = files | reject('in', refused) | list -%}
        {%- set checked = landed_file_checks(inside) if inside else {} -%}
        {%- for file in files -%}
            {%- set check = checked.get(file, {'size': none, 'problem': none}) -%}
            {%- set fact = {'source_file': file, 'bill_format': format, 'file_status': 'read', 'file_reason': none} -%}
            {%- if file in refused -%}
                {%- do fact.update({'file_status': 'rejected',
                    'file_reason': 'a symbolic link whose target is outside the landing zone: refused, not read'}) -%}
            {%- elif check.size == 0 -%}
                {%- do fact.update({'file_status': 'empty', 'file_reason': 'empty bill file (0 bytes): nothing to read'}) -%}
            {%- elif check.problem -%}
                {%- do fact.update({'file_status': 'rejected', 'file_reason': check.problem}) -%}
            {%- elif file in unreadable -%}
                {%- do fact.update({'file_status': 'rejected', 'file_reason': unreadable[file]}) -%}
            {%- else -%}
                {%- set found = landed_file_columns(file) -%}
                {%- set found_lower = found | map('lower') | list -%}
                {%- set missing = [] -%}
                {%- for entry in required -%}
                    {%- set spellings = entry.split('|') -%}
                    {%- if not (spellings | map('lower') | select('in', found_lower) | list) -%}
                        {%- do missing.append(entry) -%}
                    {%- endif -%}
                {%- endfor -%}
                {%- set other = namespace(name=none) -%}
                {%- for column, dataset in other_focus_datasets().items() if format == 'focus' -%}
                    {%- if column | lower in found_lower and 'billedcost' not in found_lower -%}
                        {%- set other.name = dataset -%}
                    {%- endif -%}
                {%- endfor -%}
                {%- if other.name -%}
                    {%- do fact.update({'file_status': 'other_dataset',
                        'file_reason': 'not cost and usage: ' ~ other.name ~ ', skipped'}) -%}
                {%- elif missing -%}
                    {#- names only the columns the format knows: a file's other "column names" could be
                        the first line of anything (a symlink's target), never echoed -#}
                    {%- set known = known_bill_columns(format) | map('lower') | list -%}
                    {%- set recognised = [] -%}
                    {%- for column in found if column | lower in known -%}{%- do recognised.append(column) -%}{%- endfor -%}
                    {%- do fact.update({'file_status': 'rejected', 'file_reason': 'missing required column(s) '
                        ~ missing | join(', ') ~ ' (found ' ~ found | length ~ ' columns'
                        ~ ((', of them ' ~ recognised[:12] | join(', ') ~ (', ...' if recognised | length > 12 else ''))
                           if recognised else ', none a known ' ~ format ~ ' column') ~ ')'}) -%}
                {%- endif -%}
            {%- endif -%}
            {%- do facts.append(fact) -%}
        {%- endfor -%}
        {#- every other landed file of the folder (not a manifest): a type no reader reads, never ignored -#}
        {%- for file in landing_files('billing/' ~ format ~ '/**/*') if file not in files
            and not modules.re.search('(?i)manifest[^/]*\\.json$', file) -%}
            {%- do facts.append({'source_file': file, 'bill_format': format, 'file_status': 'rejected',
                'file_reason': 'not a bill file type this folder reads (' ~ bill_file_types(format)
                ~ '): rename or convert it'}) -%}
        {%- endfor -%}
    {%- endfor -%}
    {{ return(bill_deliveries(facts)) }}
{%- endmacro %}

{#- The landed files that are symlinks to a target outside the landing zone (stg_landing__links; none
    when that model is not built: the spark target, or a selection without it). -#}
{% macro outside_links(links) -%}
    {%- if links is none or load_relation(links) is none -%}{{ return([]) }}{%- endif -%}
    {%- set result = run_query("select source_file from " ~ links ~ " where is_target_outside") -%}
    {{ return(result.columns[0].values() | list) }}
{%- endmacro %}

{#- The landed bill files that their reader cannot read through, each with the reader's error in one line
    (stg_landing__bill_file_probes reads each file on its own: a truncated .csv.gz, a CSV row that does not
    parse, a cut GCP JSON line); none when that model is not built (the spark target). -#}
{% macro unreadable_files(probes) -%}
    {%- if probes is none or load_relation(probes) is none -%}{{ return({}) }}{%- endif -%}
    {%- set result = run_query("select source_file, read_error from " ~ probes) -%}
    {%- set unreadable = {} -%}
    {%- for source_file, read_error in result.rows -%}{%- do unreadable.update({source_file: read_error}) -%}{%- endfor -%}
    {{ return(unreadable) }}
{%- endmacro %}

{#- Per landed file: its size and, when its bytes are not what its name says, the problem (one query). -#}
{% macro landed_file_checks(files) -%}
    {{ return(adapter.dispatch('landed_file_checks', 'gpucost')(files)) }}
{%- endmacro %}

{% macro default__landed_file_checks(files) -%}
    {%- set result = run_query(
        "select filename, size,"
        ~ " size >= 2 and content[1:2] = '\\x1F\\x8B'::blob as is_gzip,"
        ~ " size >= 8 and content[1:4] = 'PAR1'::blob and content[-4:] = 'PAR1'::blob as is_parquet,"
        ~ " try(decode(content)) is null as is_not_utf8"
        ~ " from read_blob(" ~ sql_file_list(files) ~ ")"
    ) -%}
    {{ return(landed_file_problems(result.rows)) }}
{%- endmacro %}

{#- rows of (filename, size, is_gzip, is_parquet, is_not_utf8) -> {file: {size, problem}}. -#}
{% macro landed_file_problems(rows) -%}
    {%- set checked = {} -%}
    {%- for filename, size, is_gzip, is_parquet, is_not_utf8 in rows -%}
        {%- set name = filename | lower -%}
        {%- set problem = none -%}
        {%- if size == 0 -%}
        {%- elif name.endswith('.parquet') and not is_parquet -%}
            {%- set problem = 'not a Parquet file (no PAR1 magic at its start and end): truncated or misnamed' -%}
        {%- elif name.endswith('.gz') and not is_gzip -%}
            {%- set problem = 'not gzip data although named .gz: misnamed, or re-export it compressed' -%}
        {%- elif not name.endswith('.gz') and not name.endswith('.parquet') and is_gzip -%}
            {%- set problem = 'gzip-compressed data in a file not named .gz: rename it to end in .gz' -%}
        {%- elif not name.endswith('.gz') and not name.endswith('.parquet') and is_not_utf8 -%}
            {%- set problem = 'not UTF-8 encoded text: re-export it as UTF-8 (or convert, e.g.'
                ~ ' iconv -f latin1 -t utf-8 in.csv > out.csv)' -%}
        {%- endif -%}
        {%- do checked.update({filename: {'size': size, 'problem': problem}}) -%}
    {%- endfor -%}
    {{ return(checked) }}
{%- endmacro %}

{#- The column names of one landed file, as its reader will see them. -#}
{% macro landed_file_columns(file) -%}
    {{ return(adapter.dispatch('landed_file_columns', 'gpucost')(file)) }}
{%- endmacro %}

{% macro default__landed_file_columns(file) -%}
    {%- set name = file | lower -%}
    {%- if name.endswith('.parquet') -%}
        {%- set query = "describe select * from read_parquet(" ~ quote_text(glob_escape(file)) ~ ")" -%}
    {%- elif name.endswith('.csv') or name.endswith('.csv.gz') -%}
        {%- set query = "describe select * from read_csv(" ~ quote_text(glob_escape(file))
            ~ ", header = true, all_varchar = true, compression = '"
            ~ ('gzip' if name.endswith('.gz') else 'none') ~ "')" -%}
    {%- else -%}
        {%- set query = "describe select * from read_json(" ~ quote_text(glob_escape(file))
            ~ ", format = 'newline_delimited', maximum_object_size = 268435456, compression = '"
            ~ ('gzip' if name.endswith('.gz') else 'none') ~ "')" -%}
    {%- endif -%}
    {{ return(run_query(query).columns[0].values() | list) }}
{%- endmacro %}

{#- Bill files of any format under a landing folder (CSV, gzip CSV, Parquet), as text: every name in
    `columns` present (null when a file lacks it), extra columns kept, each row with its file and data row
    number. Only the files stg_landing__bill_files accepted are read. Nested Parquet values (maps, structs,
    lists: CUR 2.0 resource_tags, GCP credits) become JSON text, so staging reads one representation
    whatever the file type. Column names come from the files: each is quoted by quote_identifier. A
    Parquet money column stored as floating point makes the build warn, naming the file. -#}
{% macro read_bill_files(relative_dir, columns) -%}
    {{ return(adapter.dispatch('read_bill_files', 'gpucost')(relative_dir, columns)) }}
{%- endmacro %}

{% macro default__read_bill_files(relative_dir, columns) -%}
    {%- set files = bill_files_to_read(relative_dir.split('/')[-1]) -%}
    {%- set csv_files = [] -%}
    {%- set gzip_files = [] -%}
    {%- set parquet_files = [] -%}
    {%- for file in files -%}
        {%- if (file | lower).endswith('.parquet') -%}{%- do parquet_files.append(file) -%}
        {%- elif (file | lower).endswith('.gz') -%}{%- do gzip_files.append(file) -%}
        {%- else -%}{%- do csv_files.append(file) -%}{%- endif -%}
    {%- endfor -%}
    select
        {% for column in columns -%}
        cast(null as string) as {{ quote_identifier(column) }},
        {% endfor -%}
        cast(null as string) as filename,
        cast(null as bigint) as source_row_number
    where false
    {%- for text_files, compression in [(csv_files, 'none'), (gzip_files, 'gzip')] if text_files %}
    union all by name
    select
        * exclude (filename),
        filename,
        row_number() over (partition by filename) as source_row_number
    from read_csv(
        {{ sql_file_list(text_files) }},
        {{ text_csv_options() }},
        compression = '{{ compression }}'
    )
    {%- endfor %}
    {%- if parquet_files %}
    {%- do warn_float_money(parquet_files) -%}
    {%- set parquet_source -%}
        read_parquet({{ sql_file_list(parquet_files) }}, union_by_name = true, filename = true, file_row_number = true)
    {%- endset -%}
    {%- set described = run_query("describe select * from " ~ parquet_source) %}
    union all by name
    select
        {% for row in described.rows if row[0] not in ('filename', 'file_row_number') -%}
        {%- if row[1].startswith('MAP') or row[1].startswith('STRUCT') or row[1].endswith(']') -%}
        cast(to_json({{ quote_identifier(row[0]) }}) as string) as {{ quote_identifier(row[0]) }},
        {%- else -%}
        cast({{ quote_identifier(row[0]) }} as string) as {{ quote_identifier(row[0]) }},
        {%- endif %}
        {% endfor -%}
        filename,
        file_row_number + 1 as source_row_number
    from {{ parquet_source }}
    {%- endif %}
{%- endmacro %}

{#- Money a Parquet file stores as FLOAT / DOUBLE is already rounded (binary floating point cannot hold
    0.1): the build reads it but warns, naming each file and column. Money columns: names with `cost`,
    `amount`, `price` or `fee` in them. -#}
{% macro warn_float_money(parquet_files) -%}
    {%- set result = run_query(
        "select file_name, name from parquet_schema(" ~ sql_file_list(parquet_files) ~ ")"
        ~ " where type in ('FLOAT', 'DOUBLE')"
        ~ " and regexp_matches(lower(name), 'cost|amount|price|fee') order by 1, 2"
    ) -%}
    {%- for file_name, name in result.rows -%}
        {%- do exceptions.warn(
            "Parquet bill file " ~ file_name ~ " stores money column " ~ name ~ " as floating point:"
            ~ " its amounts may already be rounded; export it as DECIMAL or text for exact money."
        ) -%}
    {%- endfor -%}
{%- endmacro %}

{#- Columns of FOCUS 1.0 - 1.4 that the warehouse reads (others pass through untouched). -#}
{% macro focus_columns() -%}
    {{ return([
        'AvailabilityZone', 'BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency',
        'BillingPeriodEnd', 'BillingPeriodStart', 'ChargeCategory', 'ChargeClass', 'ChargeDescription',
        'ChargeFrequency', 'ChargePeriodEnd', 'ChargePeriodStart', 'CommitmentDiscountCategory',
        'CommitmentDiscountId', 'CommitmentDiscountName', 'CommitmentDiscountStatus', 'CommitmentDiscountType',
        'ConsumedQuantity', 'ConsumedUnit', 'ContractedCost', 'ContractedUnitPrice', 'EffectiveCost',
        'InvoiceId', 'InvoiceIssuerName', 'ListCost', 'ListUnitPrice', 'PricingCategory', 'PricingQuantity',
        'PricingUnit', 'ProviderName', 'PublisherName', 'RegionId', 'RegionName', 'ResourceId', 'ResourceName',
        'ResourceType', 'ServiceCategory', 'ServiceName', 'SkuId', 'SkuPriceId', 'SubAccountId',
        'SubAccountName', 'Tags'
    ] + focus_columns_since_1_3()) }}
{%- endmacro %}

{#- Provider columns of FOCUS 1.3 / 1.4 (ServiceProviderName replaces ProviderName, HostProviderName is new;
    1.4 files have no ProviderName / PublisherName). -#}
{% macro focus_columns_since_1_3() -%}
    {{ return(['HostProviderName', 'ServiceProviderName']) }}
{%- endmacro %}

{#- Telemetry files under a landing folder (metrics/dcgm, metrics/kube), read file by file into incremental
    tables (base_dcgm__series, base_kube__series). Every landed file is one of:
    - a Prometheus HTTP API response, `.json` or `.json.gz`: /api/v1/query_range (resultType matrix) or
      /api/v1/query (resultType vector: one sample per series, at its time);
    - exposition text or OpenMetrics, `.prom`, `.txt`, `.om` (optionally `.gz`): what `curl :9400/metrics` or
      `promtool tsdb dump-openmetrics` prints, parsed by prometheus-client (gpucost.engines.prom_text, registered in
      DuckDB by gpucost.engines.duckdb_plugin); a sample without a timestamp takes the file's time (a UTC time in the
      file name, else its modification time);
    - anything else, or a file of the above that yields no sample: one row with the reason
      (file_quarantine_reason), which rpt_quarantine lists. No landed file is skipped without a row. -#}

{#- The telemetry file types by name: json, json_gz, text (exposition / OpenMetrics, plain or gzip), none. -#}
{% macro prometheus_file_format(filename) -%}
    {%- set name = filename | lower -%}
    {%- if name.endswith('.json') -%}{{ return('json') }}
    {%- elif name.endswith('.json.gz') -%}{{ return('json_gz') }}
    {%- elif name.endswith(('.prom', '.txt', '.om', '.prom.gz', '.txt.gz', '.om.gz')) -%}{{ return('text') }}
    {%- else -%}{{ return(none) }}
    {%- endif -%}
{%- endmacro %}

{#- The landed Prometheus files an incremental table still has to read: on a full build every file; on an
    incremental run the files not loaded yet and the files re-delivered since (size or modification time
    differs from what was loaded: the table's rows of such a file are replaced, delete+insert on
    source_file). Only file metadata is read here, never the bytes. -#}
{% macro prometheus_files_to_load(relative_dir) -%}
    {{ return(adapter.dispatch('prometheus_files_to_load', 'gpucost')(relative_dir)) }}
{%- endmacro %}

{% macro default__prometheus_files_to_load(relative_dir) -%}
    {%- set files = landing_files(relative_dir ~ '/**/*') -%}
    {%- if not files or not is_incremental() -%}{{ return(files) }}{%- endif -%}
    {%- set result = run_query(
        "select landed.filename from read_blob(" ~ sql_string_list(files) ~ ") as landed"
        ~ " left join (select distinct source_file, source_file_size, source_file_modified_at from "
        ~ this ~ ") as loaded on landed.filename = loaded.source_file"
        ~ " and landed.size = loaded.source_file_size"
        ~ " and cast(landed.last_modified as timestamp) = loaded.source_file_modified_at"
        ~ " where loaded.source_file is null order by 1"
    ) -%}
    {{ return(result.columns[0].values() | list) }}
{%- endmacro %}

{#- post-hook of the incremental telemetry tables: a file no longer in the landing zone takes its rows with
    it, leaving one tombstone row (no size, no samples, loaded now, its first and last sample time) so that
    int_gpu_usage_hourly recomputes the hours it covered. A file landed again replaces its tombstone. -#}
{% macro remove_unlanded_prometheus_files(relative_dir) -%}
    {{ return(adapter.dispatch('remove_unlanded_prometheus_files', 'gpucost')(relative_dir)) }}
{%- endmacro %}

{% macro default__remove_unlanded_prometheus_files(relative_dir) -%}
    {#- the landing dir is literal (glob_escape): a dir named with [1] must not make every file unlanded -#}
    {%- set pattern = (glob_escape(landing_dir()) ~ '/' ~ relative_dir) | replace("'", "''") -%}
    {%- set unlanded -%}
        source_file_size is not null
        and source_file not in (select file from glob('{{ pattern }}/**/*'))
    {%- endset -%}
    insert into {{ this }} by name
    select
        source_file,
        cast('{{ run_started_at.strftime("%Y-%m-%d %H:%M:%S.%f") }}' as timestamp) as loaded_at,
        true as is_file_without_series,
        cast(0 as bigint) as sample_count,
        min(first_sampled_epoch) as first_sampled_epoch,
        max(last_sampled_epoch) as last_sampled_epoch
    from {{ this }}
    where {{ unlanded }}
    group by source_file;
    delete from {{ this }} where {{ unlanded }}
{%- endmacro %}

{#- Why each plain `.json` file cannot be handed to read_json, found before the model's SQL runs (a file
    read_json cannot parse would stop the build): {filename: reason}. Read in batches so that only a few
    files' bytes are held at once. -#}
{% macro prometheus_json_file_reasons(files) -%}
    {%- set reasons = {} -%}
    {%- for batch in files | batch(16) -%}
        {#- the JSON types of the response's parts in one parse (json_type with a list of paths), and of every
            series' metric and values, not only the first's: one odd series would stop read_json for all -#}
        {%- set result = run_query(
            "select filename, case"
            ~ " when size = 0 then 'empty file (0 bytes)'"
            ~ " when body is null then 'not UTF-8 text'"
            ~ " when types is null then 'unparseable JSON (truncated, or not JSON)'"
            ~ " when types[1] <> 'OBJECT' then 'not a Prometheus API response (a JSON ' || lower(types[1]) || ')'"
            ~ " when coalesce(types[2], 'OBJECT') not in ('OBJECT', 'NULL')"
            ~ " or coalesce(types[3], 'ARRAY') not in ('ARRAY', 'NULL')"
            ~ " then 'not a Prometheus API response (data.result is not a list)'"
            ~ " when types[3] = 'ARRAY'"
            ~ " and coalesce(json_extract_string(body, ['$.data.resultType'])[1], '') not in ('matrix', 'vector')"
            ~ " then 'unsupported resultType ' || coalesce(json_extract_string(body, ['$.data.resultType'])[1], 'missing')"
            ~ " || ' (expected matrix or vector)'"
            ~ " when types[3] = 'ARRAY' and coalesce(types[4], 'OBJECT') <> 'OBJECT'"
            ~ " then 'not a Prometheus API response (data.result holds something other than series)'"
            ~ " when types[3] = 'ARRAY' and odd_series > 0"
            ~ " then 'not a Prometheus API response (' || odd_series || ' series whose metric is not an object"
            ~ " or whose values are not a list)'"
            ~ " end as reason"
            ~ " from (select filename, size, body,"
            ~ " try(json_type(body, ['$', '$.data', '$.data.result', '$.data.result[0]'])) as types,"
            ~ " try(len(list_filter(coalesce(json_type(body, '$.data.result[*].metric'), []), lambda t: t <> 'OBJECT'))"
            ~ " + len(list_filter(coalesce(json_type(body, '$.data.result[*].values'), []), lambda t: t <> 'ARRAY'))"
            ~ " + len(list_filter(coalesce(json_type(body, '$.data.result[*].value'), []), lambda t: t <> 'ARRAY')))"
            ~ " as odd_series"
            ~ " from (select filename, size, try(decode(content)) as body from read_blob("
            ~ sql_string_list(batch) ~ "))) where reason is not null"
        ) -%}
        {%- for row in result.rows -%}{%- do reasons.update({row[0]: row[1]}) -%}{%- endfor -%}
    {%- endfor -%}
    {{ return(reasons) }}
{%- endmacro %}

{#- The file-level reason a telemetry file yields no sample, from its response (status, resultType, result). -#}
{% macro prometheus_response_reason(status, error_type, error, result_type, result) -%}
    case
        when {{ status }} is distinct from 'success'
            then 'Prometheus response status ' || coalesce({{ status }}, 'missing')
            || coalesce(' (' || coalesce({{ error_type }}, 'error') || ': ' || {{ error }} || ')', '')
        when {{ result_type }} is null or {{ result_type }} not in ('matrix', 'vector')
            then 'unsupported resultType ' || coalesce({{ result_type }}, 'missing') || ' (expected matrix or vector)'
        when {{ result }} is null or {{ list_size(result) }} = 0 then 'no series in the response'
    end
{%- endmacro %}

{#- One row per series of each given telemetry file: the file (with its size and modification time), the
    series' labels as a map and its samples as [unix time, value text] pairs, and a null
    file_quarantine_reason. A file that yields no series gives one row with null labels and the reason. -#}
{% macro read_prometheus_series(files) -%}
    {{ return(adapter.dispatch('read_prometheus_series', 'gpucost')(files)) }}
{%- endmacro %}

{% macro default__read_prometheus_series(files) -%}
    {%- if files %}
    {%- set json_files = [] -%}
    {%- set content_files = [] -%}
    {%- set unknown_files = [] -%}
    {%- for file in files -%}
        {%- set kind = prometheus_file_format(file) -%}
        {%- if kind == 'json' -%}{%- do json_files.append(file) -%}
        {%- elif kind in ('json_gz', 'text') -%}{%- do content_files.append(file) -%}
        {%- else -%}{%- do unknown_files.append(file) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set json_reasons = prometheus_json_file_reasons(json_files) -%}
    {%- set readable_json = json_files | reject('in', json_reasons) | list -%}
    {%- set response_type -%}
        struct(
            status string, "errorType" string, error string, gpucost_reason string,
            data struct(
                "resultType" string,
                result struct(metric map(string, string), "values" string[][], value string[])[]
            )
        )
    {%- endset %}
    with

    landed as (

        select
            filename,
            size as source_file_size,
            cast(last_modified as timestamp) as source_file_modified_at
        from read_blob({{ sql_string_list(files) }})

    ),

    responses as (

        select
            cast(null as string) as filename,
            cast(null as {{ response_type }}) as response,
            cast(null as string) as file_reason
        where false
        {%- if readable_json %}
        union all
        select
            filename,
            cast({
                'status': status, 'errorType': "errorType", 'error': error,
                'gpucost_reason': cast(null as string), 'data': data
            } as {{ response_type }}) as response,
            cast(null as string) as file_reason
        from read_json(
            {{ sql_string_list(readable_json) }},
            format = 'auto',
            filename = true,
            -- one query_range response is one JSON object: a day of 1-minute DCGM for a 64-node
            -- cluster is ~18 MB, over DuckDB's 16 MB default
            maximum_object_size = 268435456,
            columns = {
                status: 'string',
                "errorType": 'string',
                error: 'string',
                data: 'struct("resultType" string, result struct(metric map(string, string), "values" string[][], value string[])[])'
            }
        )
        {%- endif %}
        {%- if content_files %}
        union all
        select
            filename,
            try(from_json(response_text, '{{ prometheus_response_json_structure() }}')) as response,
            case
                when size > 0 and body is null
                    then 'not a readable file: '
                    || case when lower(filename) like '%.gz' then 'incomplete gzip stream, or' else '' end
                    || ' not UTF-8 text'
                when size > 0 and response_text is null then 'unparseable JSON (truncated, or not JSON)'
            end as file_reason
        from (
            select
                filename,
                size,
                body,
                case
                    when {{ prometheus_text_file_sql('filename') }}
                        then gpucost_prometheus_text(body, filename, epoch(last_modified))
                    when json_valid(body) and json_type(body) = 'OBJECT' then body
                end as response_text
            from (
                select
                    filename,
                    size,
                    last_modified,
                    case
                        when lower(filename) like '%.gz' then gpucost_gunzip(content)
                        else try(decode(content))
                    end as body
                from read_blob({{ sql_string_list(content_files) }})
            ) as decoded
        ) as converted
        {%- endif %}
        {%- for file in json_reasons %}
        union all
        select '{{ file | replace("'", "''") }}', null, '{{ json_reasons[file] | replace("'", "''") }}'
        {%- endfor %}
        {%- for file in unknown_files %}
        union all
        select
            '{{ file | replace("'", "''") }}',
            null,
            'unknown telemetry file type (expected .json, .json.gz, .prom, .txt or .om)'
        {%- endfor %}

    ),

    checked as (

        select
            landed.filename,
            landed.source_file_size,
            landed.source_file_modified_at,
            responses.response.data."resultType" as result_type,
            responses.response.data.result as result,
            case
                when landed.source_file_size = 0 then 'empty file (0 bytes)'
                when responses.file_reason is not null then responses.file_reason
                when responses.response.gpucost_reason is not null then responses.response.gpucost_reason
                else {{ prometheus_response_reason(
                    'responses.response.status', 'responses.response."errorType"', 'responses.response.error',
                    'responses.response.data."resultType"', 'responses.response.data.result'
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
            unnest(case when file_quarantine_reason is null then result else [null] end) as series
        from checked

    )

    select
        filename,
        source_file_size,
        source_file_modified_at,
        series.metric as labels,
        -- an instant query's vector holds one sample per series
        case when result_type = 'vector' then [series.value] else series."values" end as samples,
        file_quarantine_reason
    from series
    {%- else %}
    select
        cast(null as varchar) as filename,
        cast(null as bigint) as source_file_size,
        cast(null as timestamp) as source_file_modified_at,
        cast(null as map(varchar, varchar)) as labels,
        cast(null as varchar[][]) as samples,
        cast(null as varchar) as file_quarantine_reason
    where false
    {%- endif %}
{%- endmacro %}

{#- SQL: true when the file name is an exposition text / OpenMetrics file (prometheus_file_format 'text'). -#}
{% macro prometheus_text_file_sql(filename) -%}
    {{ regexp_search() }}(lower({{ filename }}), '[.](prom|txt|om)([.]gz)?$')
{%- endmacro %}

{#- The response type above as from_json's JSON structure. -#}
{% macro prometheus_response_json_structure() -%}
    {"status":"VARCHAR","errorType":"VARCHAR","error":"VARCHAR","gpucost_reason":"VARCHAR","data":{"resultType":"VARCHAR","result":[{"metric":"MAP(VARCHAR, VARCHAR)","values":[["VARCHAR"]],"value":["VARCHAR"]}]}}
{%- endmacro %}

{#- An optional reference CSV: its rows, or none, with the given text columns. -#}
{% macro read_optional_csv(relative_glob, columns) -%}
    {{ return(adapter.dispatch('read_optional_csv', 'gpucost')(relative_glob, columns)) }}
{%- endmacro %}

{% macro default__read_optional_csv(relative_glob, columns) -%}
    {%- set files = landing_files(relative_glob) -%}
    select
        {% for column in columns -%}
        cast(null as string) as {{ column }},
        {% endfor -%}
        cast(null as string) as filename
    where false
    {%- if files %}
    union all by name
    select * from read_csv(
        {{ sql_string_list(files) }},
        {{ text_csv_options() }}
    )
    {%- endif %}
{%- endmacro %}

{#- How every landed CSV is read: as text (staging types it), headers by name across files, the file
    name kept, and both spellings of null that real exports use (empty and the literal NULL). -#}
{% macro text_csv_options() -%}
    header = true, all_varchar = true, union_by_name = true, filename = true, nullstr = ['', 'NULL']
{%- endmacro %}

{#- filename, size, last_modified of landed files; filename, content_md5 of landed files. -#}
{% macro landed_file_metadata(files) -%}
    {{ return(adapter.dispatch('landed_file_metadata', 'gpucost')(files)) }}
{%- endmacro %}

{% macro default__landed_file_metadata(files) -%}
    select
        filename,
        size,
        last_modified
    from read_blob({{ sql_string_list(files) }})
{%- endmacro %}

{% macro landed_file_md5(files) -%}
    {{ return(adapter.dispatch('landed_file_md5', 'gpucost')(files)) }}
{%- endmacro %}

{% macro default__landed_file_md5(files) -%}
    select
        filename,
        md5(content) as content_md5
    from read_blob({{ sql_string_list(files) }})
{%- endmacro %}

{#- The pod-spec fields read from `kubectl get pods -o json` snapshots (base_kube__pod_specs), as types. -#}
{% macro kube_pod_spec_types() -%}
    {{ return(adapter.dispatch('kube_pod_spec_types', 'gpucost')()) }}
{%- endmacro %}

{% macro default__kube_pod_spec_types() -%}
    {%- set containers = 'struct(name varchar, image varchar, command varchar[], args varchar[], workingDir varchar)[]' -%}
    {%- set volumes = 'struct(name varchar, persistentVolumeClaim struct(claimName varchar))[]' -%}
    {{ return({
        'containers': containers,
        'volumes': volumes,
        'annotations': 'map(varchar, varchar)',
        'pod': 'struct(metadata struct(name varchar, namespace varchar, uid varchar, annotations map(varchar, varchar)),'
            ~ ' spec struct(containers '
            ~ containers ~ ', volumes ' ~ volumes ~ '))',
    }) }}
{%- endmacro %}

{#- One row per pod object of each Pod List snapshot file: filename, pod_object. -#}
{% macro read_kube_pod_lists(files) -%}
    {{ return(adapter.dispatch('read_kube_pod_lists', 'gpucost')(files)) }}
{%- endmacro %}

{% macro default__read_kube_pod_lists(files) -%}
    select
        filename,
        unnest(items) as pod_object
    from read_json(
        {{ sql_string_list(files) }},
        format = 'auto',
        filename = true,
        maximum_object_size = 268435456,
        columns = {kind: 'varchar', items: '{{ kube_pod_spec_types().pod }}[]'}
    )
    where kind in ('List', 'PodList')
{%- endmacro %}
