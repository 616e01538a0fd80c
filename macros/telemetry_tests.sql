{#- dbt's `where` config of a data test, rendered when the test runs (this project's override of dbt's
    get_where_subquery). Two placeholders let the data tests of the per-sample staging views read only the
    telemetry not consumed yet (unconsumed_telemetry) instead of every sample of the month. -#}
{% macro get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- if not where -%}{{ return(relation) }}{%- endif -%}
    {%- if '__unconsumed_telemetry_' in where -%}
        {%- set scope = unconsumed_telemetry() -%}
        {%- set where = where
            | replace('__unconsumed_telemetry_files__', scope.files)
            | replace('__unconsumed_telemetry_samples__', scope.samples) -%}
    {%- endif -%}
    {{ return('(select * from ' ~ relation ~ ' where ' ~ where ~ ') dbt_subquery') }}
{%- endmacro %}

{#- The telemetry the incremental int_telemetry_sample_intervals has not consumed yet: the DCGM and kube files
    base_dcgm__series / base_kube__series loaded after its newest inputs_loaded_at. Returns two conditions:
      files    source_file is one of those files (for a test whose key holds source_file);
      samples  sampled_epoch at or after their first sample (for a test whose key holds sampled_epoch: a repeated
               key lies wholly inside or wholly outside, and the samples before were checked when they came).
    In `dbt build` such a test runs before int_telemetry_sample_intervals, its descendant, consumes those files; a
    failing test stops it, so the next build checks the same files again. Everything (true) on a first build, with
    `--full-refresh`, on the Spark target and under var gpucost_test_every_sample: true, e.g. for a `dbt test` run
    after a build, which would otherwise find nothing new. The tables are found in the graph, not by ref(): a ref
    would make the test wait for the intervals to be built. -#}
{% macro unconsumed_telemetry() -%}
    {%- set everything = {'files': 'true', 'samples': 'true'} -%}
    {%- if not execute or target.type == 'spark' or flags.FULL_REFRESH or var('gpucost_test_every_sample') -%}
        {{ return(everything) }}
    {%- endif -%}
    {%- set nodes = {} -%}
    {%- for name in ['int_telemetry_sample_intervals', 'base_dcgm__series', 'base_kube__series'] -%}
        {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ name] -%}
        {%- do nodes.update({name: adapter.get_relation(node.database, node.schema, node.alias)}) -%}
    {%- endfor -%}
    {%- set watermark = telemetry_watermark(nodes['int_telemetry_sample_intervals']) -%}
    {%- if watermark is none -%}{{ return(everything) }}{%- endif -%}
    {%- set loaded = run_query(
        "select distinct source_file, min(first_sampled_epoch) filter (where sample_count > 0) over () as first_epoch"
        ~ " from (select source_file, loaded_at, first_sampled_epoch, sample_count from " ~ nodes['base_dcgm__series']
        ~ " union all select source_file, loaded_at, first_sampled_epoch, sample_count from "
        ~ nodes['base_kube__series'] ~ ") as loaded where loaded_at > cast('" ~ watermark ~ "' as timestamp)"
        ~ " order by source_file"
    ) -%}
    {%- set files = loaded.columns[0].values() | list -%}
    {%- set first = loaded.columns[1].values()[0] if files else none -%}
    {{ return({
        'files': 'source_file in ' ~ quote_text_tuple(files) if files else 'false',
        'samples': 'sampled_epoch >= ' ~ first if first is not none else 'false',
    }) }}
{%- endmacro %}
