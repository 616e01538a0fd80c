{#- What a delivery is, per bill format, following each provider's real layout. A delivery is one run of an
    export: its files are parts of one bill snapshot, and a later delivery of the same provider, billing
    account, month and dataset restates (replaces) it (bill_charges.sql ranks them).

    - Path segments `key=value` are partitions, never deliveries: AWS Data Exports / CUR 2.0
      `data/BILLING_PERIOD=YYYY-MM/`, Hive-style FOCUS folders `day=YYYY-MM-DD/part-0.csv`. The delivery is
      the folder above them (so the parts of a partitioned month add up instead of the last day winning).
    - Otherwise a delivery is the file's folder: a legacy CUR assembly-id folder
      (`yyyymmdd-yyyymmdd/<assemblyId>/`, or the date-range folder itself in overwrite mode), an Azure
      export run folder (`<yyyymmdd-yyyymmdd>/<runId>/part_*.csv` with its manifest.json), a FOCUS folder.
      An Azure export file directly in its date-range folder that is not a `part_*` file (the older,
      unpartitioned exports, one month-to-date file per run) is a delivery by itself.
    - GCP billing exports and OCI cost reports are append-only (a correction is a new row, never a restated
      file): the whole format folder is one delivery; the same rows landed twice count once (row identity).
    - A delivery's time is (1) the time its provider's manifest gives (Azure `runInfo.submittedTime`, a
      manifest's `executionTime` / `exportTime`), else (2) the delivery time in its path: the nearest folder
      (or, for a single-file delivery, the file name) that starts with one (20261104T000000Z,
      2026-11-04T00:00:00Z, 20261104T0000, 202611040000).
    - Manifests (`*Manifest.json`, `manifest.json`) name their data files (legacy CUR `reportKeys`, Data
      Exports `dataFiles`, Azure `blobs[].blobName`), matched by the last two path segments. A file named
      by a manifest outside its own folder (the legacy CUR top-level manifest naming the current assembly,
      a Data Exports `metadata/` manifest) is the manifest's current delivery; a file of a delivery whose
      manifest names other files but not it is a leftover and is not read as part of the bill. -#}
{% macro bill_deliveries(facts) -%}
    {%- set root = landing_dir() | replace('\\', '/') -%}
    {%- set manifests = bill_manifests() -%}
    {%- set listed_folders = [] -%}
    {%- for fact in facts -%}
        {%- set path = fact.source_file | replace('\\', '/') -%}
        {%- set marker = '/billing/' ~ fact.bill_format ~ '/' -%}
        {%- set format_root = path[:path.find(marker) + marker | length - 1] if marker in path else root ~ '/billing/' ~ fact.bill_format -%}
        {%- set relative = path[format_root | length + 1:] -%}
        {%- set parts = relative.split('/') -%}
        {%- set folders = [] -%}
        {%- for part in parts[:-1] if not modules.re.match('^[A-Za-z_][A-Za-z0-9_]*=', part) -%}
            {%- do folders.append(part) -%}
        {%- endfor -%}
        {%- set name = parts[-1] -%}
        {%- set tail = (parts[-2:] | join('/')) if parts | length > 1 else name -%}
        {%- set named = manifests.get(tail, []) -%}
        {%- if fact.bill_format in ('gcp', 'oci') -%}
            {%- set folder = format_root -%}
            {%- set time_sources = [] -%}
        {%- elif fact.bill_format == 'azure' and not named and folders
            and modules.re.match('^[0-9]{8}-[0-9]{8}$', folders[-1]) and not modules.re.match('(?i)^part_', name) -%}
            {%- set folder = path -%}
            {%- set time_sources = [name] + folders | reverse | list -%}
        {%- else -%}
            {%- set folder = ([format_root] + folders) | join('/') -%}
            {%- set time_sources = folders | reverse | list -%}
        {%- endif -%}
        {%- set found = namespace(at=none, outer=false) -%}
        {%- for manifest in named -%}
            {%- if manifest.at and (found.at is none or manifest.at > found.at) -%}{%- set found.at = manifest.at -%}{%- endif -%}
            {%- if manifest.folder != path[:path.rfind('/')] -%}{%- set found.outer = true -%}{%- endif -%}
        {%- endfor -%}
        {%- if found.at is none -%}
            {%- for segment in time_sources if found.at is none -%}
                {%- set found.at = delivery_time_text(segment) -%}
            {%- endfor -%}
        {%- endif -%}
        {%- do fact.update({
            'delivery_folder': folder,
            'delivery_at': found.at,
            'is_current_by_manifest': found.outer,
            'is_listed_in_manifest': named | length > 0,
        }) -%}
        {%- if named and fact.file_status == 'read' -%}{%- do listed_folders.append(folder) -%}{%- endif -%}
    {%- endfor -%}
    {#- a delivery whose manifest names some of its files: the others are leftovers -#}
    {%- for fact in facts -%}
        {%- if fact.delivery_folder in listed_folders and not fact.is_listed_in_manifest and fact.file_status == 'read' -%}
            {%- do fact.update({'file_status': 'not_in_manifest',
                'file_reason': 'not listed by its delivery\'s manifest (a leftover of an earlier run)'}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(facts) }}
{%- endmacro %}

{#- A delivery time at the start of a path segment, as 'YYYY-MM-DD HH:MM:SS' text, or none. -#}
{% macro delivery_time_text(segment) -%}
    {%- set match = modules.re.match(
        '^([0-9]{4})-?([0-9]{2})-?([0-9]{2})T([0-9]{2}):?([0-9]{2}):?([0-9]{2})?', segment
    ) or modules.re.match('^([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})?$', segment) -%}
    {%- if not match -%}{{ return(none) }}{%- endif -%}
    {%- set year, month, day, hour, minute = match.groups()[:5] | map('int') | list -%}
    {%- set second = (match.group(6) or '0') | int -%}
    {%- if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 60) -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return('%04d-%02d-%02d %02d:%02d:%02d' | format(year, month, day, hour, minute, second)) }}
{%- endmacro %}

{#- Every landed bill manifest, by the data files it names: {'<folder>/<file>': [{folder, at}]}. -#}
{% macro bill_manifests() -%}
    {%- set files = [] -%}
    {%- for format in bill_formats() -%}
        {%- for pattern in ['*anifest*.json', '*ANIFEST*.json'] -%}
            {%- for file in landing_files('billing/' ~ format ~ '/**/' ~ pattern) -%}
                {%- if file not in files -%}{%- do files.append(file) -%}{%- endif -%}
            {%- endfor -%}
        {%- endfor -%}
    {%- endfor -%}
    {%- set by_tail = {} -%}
    {%- if not files -%}{{ return(by_tail) }}{%- endif -%}
    {%- for filename, content in landed_texts(files) -%}
        {%- set document = fromjson(content) if content else none -%}
        {%- if document is mapping -%}
            {%- set keys = [] -%}
            {%- for key in (document.get('reportKeys') or []) + (document.get('dataFiles') or []) -%}
                {%- if key is string -%}{%- do keys.append(key) -%}{%- endif -%}
            {%- endfor -%}
            {%- for blob in document.get('blobs') or [] if blob is mapping and blob.get('blobName') is string -%}
                {%- do keys.append(blob.blobName) -%}
            {%- endfor -%}
            {%- set run = document.get('runInfo') if document.get('runInfo') is mapping else {} -%}
            {%- set stamp = run.get('submittedTime') or document.get('executionTime') or document.get('exportTime') -%}
            {%- set at = delivery_time_text(stamp) if stamp is string else none -%}
            {%- set path = filename | replace('\\', '/') -%}
            {%- for key in keys -%}
                {%- set segments = key.replace('\\', '/').split('/') -%}
                {%- set tail = segments[-2:] | join('/') -%}
                {%- do by_tail.setdefault(tail, []).append({'folder': path[:path.rfind('/')], 'at': at}) -%}
            {%- endfor -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(by_tail) }}
{%- endmacro %}

{#- (filename, text) of small landed text files (manifests); text null when it is not UTF-8. -#}
{% macro landed_texts(files) -%}
    {{ return(adapter.dispatch('landed_texts', 'gpucost')(files)) }}
{%- endmacro %}

{% macro default__landed_texts(files) -%}
    {%- set result = run_query(
        "select filename, try(decode(content)) from read_blob(" ~ sql_string_list(files) ~ ") order by 1"
    ) -%}
    {{ return(result.rows) }}
{%- endmacro %}
