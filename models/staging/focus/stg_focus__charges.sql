-- FOCUS 1.0 - 1.4 exports, typed by the same rules as every native billing format (typed_bill_charges).
with

source as (

    select
        *,
        cast(null as string) as native_charge_type,
        cast(null as string) as delivery_dataset,
        cast(null as string) as native_superseded_reason
    from {{ ref('base_focus__exports') }}

),

{{ typed_bill_charges('source', 'focus') }}

select * from final
