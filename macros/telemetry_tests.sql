{#- dbt's `where` config of a data test, rendered when the test runs (this project's override of dbt's
    get_where_subquery): its placeholders become conditions (render_test_scope), so the data tests of the
    per-sample staging views read only the telemetry not consumed yet instead of every sample of the month. -#}
{% macro get_where_subquery(relation) -%}
    {%- set where = config.get('where', '') -%}
    {%- if not where -%}{{ return(relation) }}{%- endif -%}
    {%- if where == '__unconsumed_telemetry_samples__' and relation.identifier == 'stg_dcgm__gpu_samples' -%}
        {#- the view's rows from that time on, without unnesting the series that end before it -#}
        {%- set first = unconsumed_telemetry().first_epoch -%}
        {{ return('(' ~ dcgm_gpu_samples(graph_relation('base_dcgm__series'), first) ~ ') dbt_subquery') }}
    {%- endif -%}
    {{ return('(select * from ' ~ relation ~ ' where ' ~ render_test_scope(where) ~ ') dbt_subquery') }}
{%- endmacro %}

{#- A data test's scope condition with its placeholders rendered when the test runs:
      __unconsumed_telemetry_files__, __unconsumed_telemetry_samples__   unconsumed_telemetry's conditions;
      __unconsumed_sample_intervals__   unconsumed_sample_intervals' condition.
    Any other text is returned as written. -#}
{% macro render_test_scope(condition) -%}
    {%- set rendered = condition -%}
    {%- if '__unconsumed_telemetry_' in rendered -%}
        {%- set scope = unconsumed_telemetry() -%}
        {%- set rendered = rendered
            | replace('__unconsumed_telemetry_files__', scope.files)
            | replace('__unconsumed_telemetry_samples__', scope.samples) -%}
    {%- endif -%}
    {%- if '__unconsumed_sample_intervals__' in rendered -%}
        {%- set rendered = rendered | replace('__unconsumed_sample_intervals__', unconsumed_sample_intervals()) -%}
    {%- endif -%}
    {{ return(rendered) }}
{%- endmacro %}

{#- Whether a data test checks everything: not at parse time, on the Spark target, with `--full-refresh` and
    under var gpucost_test_every_sample: true (e.g. for a `dbt test` run after a build, which would otherwise find
    nothing new). -#}
{% macro test_every_row() -%}
    {{ return(not execute or target.type == 'spark' or flags.FULL_REFRESH or var('gpucost_test_every_sample')) }}
{%- endmacro %}

{#- A model's relation found in the graph, not by ref(): a ref from a data test would make it wait for that
    model to be built. -#}
{% macro graph_relation(name) -%}
    {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ name] -%}
    {{ return(adapter.get_relation(node.database, node.schema, node.alias)) }}
{%- endmacro %}

{#- The rows of int_telemetry_sample_intervals its incremental reader int_gpu_usage_hourly has not consumed yet:
    inputs_loaded_at after the usage table's newest (telemetry_watermark). Rows computed by an earlier run keep
    their key (the post-hook changes gaps and steps only), so a repeated key always involves such a row; in `dbt
    build` the key test runs before the usage reads them, and a failing test stops it, so the next build checks the
    same rows again. Everything (true) under test_every_row and when the usage table is missing or predates
    inputs_loaded_at. -#}
{% macro unconsumed_sample_intervals() -%}
    {%- if test_every_row() -%}{{ return('true') }}{%- endif -%}
    {%- set watermark = telemetry_watermark(graph_relation('int_gpu_usage_hourly')) -%}
    {%- if watermark is none -%}{{ return('true') }}{%- endif -%}
    {{ return("inputs_loaded_at > cast('" ~ watermark ~ "' as timestamp)") }}
{%- endmacro %}

{#- The telemetry the incremental int_telemetry_sample_intervals has not consumed yet: the DCGM and kube files
    base_dcgm__series / base_kube__series loaded after its newest inputs_loaded_at. Returns two conditions and an epoch:
      files        source_file is one of those files (for a test whose key holds source_file);
      samples      sampled_epoch at or after their first sample (for a test whose key holds sampled_epoch: a
                   repeated key lies wholly inside or wholly outside, and the samples before were checked when
                   they came);
      first_epoch  that first sample (none: everything; past gpucost_max_epoch: nothing was loaded since), for a
                   view read from a time on (get_where_subquery).
    In `dbt build` such a test runs before int_telemetry_sample_intervals, its descendant, consumes those files; a
    failing test stops it, so the next build checks the same files again. Everything (true) on a first build, with
    `--full-refresh`, on the Spark target and under var gpucost_test_every_sample: true, e.g. for a `dbt test` run
    after a build, which would otherwise find nothing new. The tables are found in the graph, not by ref(): a ref
    would make the test wait for the intervals to be built. -#}
{% macro unconsumed_telemetry() -%}
    {%- set everything = {'files': 'true', 'samples': 'true', 'first_epoch': none} -%}
    {%- if test_every_row() -%}{{ return(everything) }}{%- endif -%}
    {%- set nodes = {} -%}
    {%- for name in ['int_telemetry_sample_intervals', 'base_dcgm__series', 'base_kube__series'] -%}
        {%- do nodes.update({name: graph_relation(name)}) -%}
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
    {#- no file loaded since: a first epoch past every sample, so that no row is read -#}
    {{ return({
        'files': 'source_file in ' ~ quote_text_tuple(files) if files else 'false',
        'samples': 'sampled_epoch >= ' ~ first if first is not none else 'false',
        'first_epoch': first if first is not none else var('gpucost_max_epoch') + 1,
    }) }}
{%- endmacro %}
