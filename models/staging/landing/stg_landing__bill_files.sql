-- Every landed bill file, decided once: read, or why not (empty, rejected with the reason, another FOCUS
-- dataset, a leftover its delivery's manifest does not list), and its delivery (macros/bill_deliveries.sql):
-- the delivery folder, the delivery's time from the provider's manifest or its path, and whether an outer
-- manifest names it current. The bill base models read only the files whose file_status is 'read'.
{%- set links = ref('stg_landing__links') if target.type != 'spark' else none %}
{%- set probes = ref('stg_landing__bill_file_probes') if target.type != 'spark' else none %}
{%- set facts = bill_landing_facts(links, probes) if execute else [] %}

with

files as (

    select
        cast(null as string) as source_file,
        cast(null as string) as bill_format,
        cast(null as string) as file_status,
        cast(null as string) as file_reason,
        cast(null as string) as delivery_folder,
        cast(null as timestamp) as delivery_at,
        cast(null as boolean) as is_current_by_manifest,
        cast(null as boolean) as is_listed_in_manifest
    where false
    {%- for fact in facts %}
        union all
        select
            {{ quote_text(fact.source_file) }} as source_file,
            {{ quote_text(fact.bill_format) }} as bill_format,
            {{ quote_text(fact.file_status) }} as file_status,
            {{ quote_text(fact.file_reason) if fact.file_reason else 'cast(null as string)' }} as file_reason,
            {{ quote_text(fact.delivery_folder) }} as delivery_folder,
            {{ "cast('" ~ fact.delivery_at ~ "' as timestamp)" if fact.delivery_at else 'cast(null as timestamp)' }}
                as delivery_at,
            {{ 'true' if fact.is_current_by_manifest else 'false' }} as is_current_by_manifest,
            {{ 'true' if fact.is_listed_in_manifest else 'false' }} as is_listed_in_manifest
    {%- endfor %}

),

final as (

    select * from files

)

select * from final
