-- Each allocation's exact share of its origin charge's summable metrics other than its own costs (ListCost,
-- ContractedCost, PricingQuantity, ConsumedQuantity), split by the allocated ratio: largest remainder in
-- 1e-18 units per charge (macro split_by_ratio), read by the FOCUS export.
-- Incremental by charge on DuckDB: a charge's shares depend only on its metrics and its allocations' ratios,
-- whose digest (macro line_digests) each row keeps; a build computes only the charges whose digest changed
-- or is new, replaces their rows, and deletes the rows of charges no longer allocated.
{{ config(**by_charge_config()) }}

with

allocated_ratios as (

    select
        allocation_id,
        charge_id,
        allocation_ratio
    from {{ ref('fct_cost_allocation') }}

),

charge_metrics as (

    select
        charge_id,
        list_cost,
        contracted_cost,
        pricing_quantity,
        consumed_quantity
    from {{ ref('int_bill_line_items') }}
    where charge_id in (select allocated_ratios.charge_id from allocated_ratios)

),

digests as (

    {{ line_digests([
        ['allocated_ratios', ['allocation_id', 'charge_id', 'allocation_ratio']],
        ['charge_metrics', ['charge_id', 'list_cost', 'contracted_cost', 'pricing_quantity', 'consumed_quantity']],
    ], 'charge_id', line_digest_salt()) }}

),

charges_to_split as (

    {{ charges_to_recompute('digests', is_incremental()) }}

),

split_terms as (

    -- the terms of the split, on the few columns it reads (a window sorts every column of its input)
    select
        allocated_ratios.allocation_id,
        allocated_ratios.charge_id,
        {{ split_by_ratio_terms('charge_metrics.list_cost', 'allocated_ratios.allocation_ratio', 'list_cost') }},
        {{ split_by_ratio_terms(
            'charge_metrics.contracted_cost', 'allocated_ratios.allocation_ratio', 'contracted_cost'
        ) }},
        {{ split_by_ratio_terms(
            'charge_metrics.pricing_quantity', 'allocated_ratios.allocation_ratio', 'pricing_quantity'
        ) }},
        {{ split_by_ratio_terms(
            'charge_metrics.consumed_quantity', 'allocated_ratios.allocation_ratio', 'consumed_quantity'
        ) }}
    from allocated_ratios
    inner join charge_metrics on allocated_ratios.charge_id = charge_metrics.charge_id
    inner join charges_to_split on cast(allocated_ratios.charge_id as varchar) = charges_to_split.input_key

),

final as (

    select
        split_terms.allocation_id,
        split_terms.charge_id,
        {{ split_by_ratio('list_cost', 'split_terms.charge_id', 'split_terms.allocation_id') }} as list_cost,
        {{ split_by_ratio('contracted_cost', 'split_terms.charge_id', 'split_terms.allocation_id') }}
            as contracted_cost,
        {{ split_by_ratio('pricing_quantity', 'split_terms.charge_id', 'split_terms.allocation_id') }}
            as pricing_quantity,
        {{ split_by_ratio('consumed_quantity', 'split_terms.charge_id', 'split_terms.allocation_id') }}
            as consumed_quantity,
        charges_to_split.input_key,
        charges_to_split.input_fingerprint
    from split_terms
    inner join charges_to_split on cast(split_terms.charge_id as varchar) = charges_to_split.input_key

)

select * from final
