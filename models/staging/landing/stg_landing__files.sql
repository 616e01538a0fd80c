-- Every file in the landing zone: its kind, size and (for bills) content hash, and which earlier file a
-- byte-identical bill file repeats (its rows are counted once by row identity, macros/bill_charges.sql).
{%- set files = landing_files('**/*') %}
{%- set bill_files = landing_files('billing/**/*') %}

with

{% if files %}
source as (

    {{ landed_file_metadata(files) }}

),

bill_hashes as (

    {%- if bill_files %}
    {{ landed_file_md5(bill_files) }}
    {%- else %}
    select
        cast(null as string) as filename,
        cast(null as string) as content_md5
    where false
    {%- endif %}

),
{% else %}
    source as (

        select
            cast(null as string) as filename,
            cast(null as bigint) as size,
            cast(null as timestamp) as last_modified
        where false

    ),

    bill_hashes as (

        select
            cast(null as string) as filename,
            cast(null as string) as content_md5
        where false

    ),
{% endif %}

hashed as (

    select
        source.filename,
        source.size,
        source.last_modified,
        bill_hashes.content_md5,
        first_value(source.filename) over (
            partition by bill_hashes.content_md5 order by source.filename
        ) as first_file_with_content
    from source
    left join bill_hashes on source.filename = bill_hashes.filename

),

final as (

    select
        filename as source_file,
        regexp_extract(
            replace(filename, '\\', '/'), '/((billing|metrics)/[^/]+|reference)/', 1
        ) as source_kind,
        size as size_bytes,
        content_md5,
        case
            when content_md5 is not null and first_file_with_content <> filename then first_file_with_content
        end as duplicate_of_file,
        cast(last_modified as timestamp) as last_modified_at
    from hashed

)

select * from final
