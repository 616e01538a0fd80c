-- The allocation as FOCUS 1.4 Cost and Usage rows in split cost allocation form: one allocated charge per
-- fct_cost_allocation row. Following the spec's DataGeneratorCalculatedSplitCostAllocationHandling, the
-- origin charge's dimensions and non-summable metrics (unit prices) are repeated, and its summable
-- metrics are split so that the allocated charges of one origin charge sum exactly to it: BilledCost and
-- EffectiveCost are the allocation's own exact shares, ListCost, ContractedCost, PricingQuantity and
-- ConsumedQuantity are split by the allocated ratio (fct_allocation_metric_splits: largest remainder in 1e-18
-- units, built by charge).
-- AllocatedMethodDetails carries the ratio and, where a workload's GPU time sized the share, its GPU-hours
-- (UsageUnit GPU-Hours, UsageQuantity). AllocatedResourceId is the workload or the owning project, null on
-- the unallocated portion, as the spec asks. FOCUS 1.4 names: ServiceProviderName and HostProviderName, no
-- ProviderName / PublisherName (docs/focus-export.md; the column list is checked against the spec in
-- tests/python/test_focus14.py).
-- Incremental by origin charge on DuckDB: a charge's rows depend only on its allocations, its own bill line, its
-- metric splits and its workloads' GPU-hours, whose digest (macro line_digests, over those rows) each row
-- keeps; a build writes again only the charges whose digest changed or is new, and deletes the rows of charges no
-- longer allocated. A warehouse built before the digests rebuilds every charge once.
{{ config(**by_charge_config()) }}
{#- a table of the version before the digests has no input_fingerprint yet: every charge is written again -#}
{%- set keeps = is_incremental() and 'input_fingerprint' in (
    adapter.get_columns_in_relation(this) | map(attribute='name') | list
) %}

with

allocations as (

    select
        allocation_id,
        charge_id,
        workload_id,
        team_id,
        project_id,
        user_id,
        cluster_id,
        node_name,
        allocation_kind,
        allocation_basis,
        attribution_method,
        unallocated_reason,
        allocation_ratio,
        billed_cost,
        effective_cost
    from {{ ref('fct_cost_allocation') }}

),

charges as (

    -- the origin charge's columns this model writes (and the digest reads)
    select
        charge_id,
        billing_account_id,
        billing_account_name,
        sub_account_id,
        sub_account_name,
        invoice_id,
        invoice_issuer_name,
        provider_name,
        host_provider_name,
        service_name,
        service_category,
        charge_category,
        charge_class,
        charge_frequency,
        charge_description,
        resource_id,
        resource_name,
        resource_type,
        region_id,
        region_name,
        availability_zone,
        sku_id,
        sku_price_id,
        pricing_category,
        pricing_unit,
        consumed_unit,
        commitment_discount_id,
        commitment_discount_category,
        commitment_discount_name,
        commitment_discount_status,
        commitment_discount_type,
        list_unit_price,
        contracted_unit_price,
        list_cost,
        contracted_cost,
        pricing_quantity,
        consumed_quantity,
        tags,
        billing_currency,
        billing_period_start_at,
        billing_period_end_at,
        charge_period_start_at,
        charge_period_end_at
    from {{ ref('int_bill_line_items') }}

),

split_metrics as (

    -- the origin charge's summable metrics, split exactly by the allocated ratio (built by charge)
    select
        allocation_id,
        charge_id,
        list_cost,
        contracted_cost,
        pricing_quantity,
        consumed_quantity
    from {{ ref('fct_allocation_metric_splits') }}

),

gpu_usage as (

    -- GPU-hours of each workload on each GPU node line, under the allocation basis (one rule: fct_gpu_usage)
    select
        charge_id,
        workload_id,
        gpu_hours
    from {{ ref('fct_gpu_usage') }}
    where usage_kind = 'usage'

),

-- each charge's rows in every input, every column this model reads; the salt: this model's code, the project's
-- macros, the engine and the tag keys it writes
digests as (

    {{ line_digests([
        ['allocations', ['*']],
        ['charges', ['*']],
        ['split_metrics', ['*']],
        ['gpu_usage', ['*']],
    ], 'charge_id', line_digest_salt() ~ var('gpucost_tag_key_team') ~ var('gpucost_tag_key_project') ~ var('gpucost_tag_key_user')) }}

),

charges_to_write as (

    {{ charges_to_recompute('digests', keeps) }}

),

joined as (

    select
        allocations.allocation_id,
        allocations.charge_id,
        allocations.workload_id,
        allocations.team_id,
        allocations.project_id,
        allocations.user_id,
        allocations.cluster_id,
        allocations.node_name,
        allocations.allocation_kind,
        allocations.allocation_basis,
        allocations.attribution_method,
        allocations.unallocated_reason,
        allocations.allocation_ratio,
        allocations.billed_cost,
        allocations.effective_cost,
        charges_to_write.input_key,
        charges_to_write.input_fingerprint,
        charges.billing_account_id,
        charges.billing_account_name,
        charges.sub_account_id,
        charges.sub_account_name,
        charges.invoice_id,
        charges.invoice_issuer_name,
        charges.provider_name as service_provider_name,
        charges.host_provider_name,
        charges.service_name,
        charges.service_category,
        charges.charge_category,
        charges.charge_class,
        charges.charge_frequency,
        charges.charge_description,
        charges.resource_id,
        charges.resource_name,
        charges.resource_type,
        charges.region_id,
        charges.region_name,
        charges.availability_zone,
        charges.sku_id,
        charges.sku_price_id,
        charges.pricing_category,
        charges.pricing_unit,
        charges.consumed_unit,
        charges.commitment_discount_id,
        charges.commitment_discount_category,
        charges.commitment_discount_name,
        charges.commitment_discount_status,
        charges.commitment_discount_type,
        charges.list_unit_price,
        charges.contracted_unit_price,
        charges.list_cost as origin_list_cost,
        charges.contracted_cost as origin_contracted_cost,
        charges.pricing_quantity as origin_pricing_quantity,
        charges.consumed_quantity as origin_consumed_quantity,
        cast(charges.tags as string) as origin_tags,
        charges.billing_currency,
        charges.billing_period_start_at,
        charges.billing_period_end_at,
        charges.charge_period_start_at,
        charges.charge_period_end_at,
        -- GPU-hours only where the workload's GPU time sized the share: its usage share, or the share it
        -- would have had as usage when it has no owner (unallocated); not the CPU / memory parts of a
        -- node line, idle spreading or volume claims
        case
            when
                allocations.allocation_kind in ('usage', 'unallocated')
                and allocations.allocation_basis in ('requested', 'used', 'max')
                then gpu_usage.gpu_hours
        end as gpu_hours
    from allocations
    inner join charges_to_write on cast(allocations.charge_id as varchar) = charges_to_write.input_key
    inner join charges on allocations.charge_id = charges.charge_id
    left join gpu_usage
        on
        allocations.charge_id = gpu_usage.charge_id
        and allocations.workload_id = gpu_usage.workload_id

),

split as (

    select
        joined.*,
        split_metrics.list_cost,
        split_metrics.contracted_cost,
        split_metrics.pricing_quantity,
        split_metrics.consumed_quantity
    from joined
    inner join split_metrics on joined.allocation_id = split_metrics.allocation_id

),

described as (

    select
        *,
        'gpucost/' || allocation_kind || '/' || allocation_basis as allocated_method_id,
        -- built as text: DuckDB's nested json_object / json_array pass a DECIMAL through a DOUBLE, which
        -- would round the ratio; cast(decimal as string) keeps all 18 places
        '{"Elements":[{"AllocatedRatio":' || cast(allocation_ratio as string)
        || case
            when gpu_hours is not null
                then ',"UsageUnit":"GPU-Hours","UsageQuantity":' || cast(gpu_hours as string)
            else ''
        end
        || ',"x_AllocationKind":' || cast(to_json(allocation_kind) as string)
        || ',"x_AllocationBasis":' || cast(to_json(allocation_basis) as string)
        || ',"x_AttributionMethod":' || cast(to_json(attribution_method) as string)
        || '}]}' as allocated_method_details,
        -- the unallocated portion of the origin charge (FOCUS: no AllocatedResourceId there): money
        -- nobody could be given, and idle time kept visible on the idle owner
        allocation_kind = 'unallocated'
        or team_id in ('{{ idle_owner() }}', '{{ unallocated_owner() }}') as is_unallocated_portion,
        -- the owner as the bill's own tag keys; keys without a value, and tags the origin charge already
        -- carries with the same value, are left out (merge-patch drops nulls)
        cast(json_merge_patch('{}', json_object(
            '{{ var("gpucost_tag_key_team") }}',
            case
                when
                    json_extract_string(origin_tags, '$."{{ var("gpucost_tag_key_team") }}"')
                    is distinct from team_id
                    then team_id
            end,
            '{{ var("gpucost_tag_key_project") }}',
            case
                when
                    json_extract_string(origin_tags, '$."{{ var("gpucost_tag_key_project") }}"')
                    is distinct from project_id
                    then project_id
            end,
            '{{ var("gpucost_tag_key_user") }}',
            case
                when
                    json_extract_string(origin_tags, '$."{{ var("gpucost_tag_key_user") }}"')
                    is distinct from user_id
                    then user_id
            end
        )) as string) as owner_tags,
        split_part(workload_id, '/', 3) as workload_pod_name
    from split

),

final as (

    select
        -- split cost allocation (FOCUS 1.3+)
        allocated_method_details as "AllocatedMethodDetails",
        allocated_method_id as "AllocatedMethodId",
        -- what the cost is allocated to: the workload, else the owning project; null on the unallocated
        -- portion (and so its name and tags)
        case
            when not is_unallocated_portion
                then coalesce(workload_id, 'project:' || team_id || '/' || project_id)
        end as "AllocatedResourceId",
        case
            when not is_unallocated_portion then coalesce(nullif(workload_pod_name, ''), project_id)
        end as "AllocatedResourceName",
        case when not is_unallocated_portion then nullif(owner_tags, '{}') end as "AllocatedTags",
        -- the origin charge's dimensions, as billed; its summable metrics, this row's exact share
        availability_zone as "AvailabilityZone",
        billed_cost as "BilledCost",
        billing_account_id as "BillingAccountId",
        billing_account_name as "BillingAccountName",
        billing_currency as "BillingCurrency",
        billing_period_end_at as "BillingPeriodEnd",
        billing_period_start_at as "BillingPeriodStart",
        charge_category as "ChargeCategory",
        charge_class as "ChargeClass",
        charge_description as "ChargeDescription",
        charge_frequency as "ChargeFrequency",
        charge_period_end_at as "ChargePeriodEnd",
        charge_period_start_at as "ChargePeriodStart",
        commitment_discount_category as "CommitmentDiscountCategory",
        commitment_discount_id as "CommitmentDiscountId",
        commitment_discount_name as "CommitmentDiscountName",
        commitment_discount_status as "CommitmentDiscountStatus",
        commitment_discount_type as "CommitmentDiscountType",
        consumed_quantity as "ConsumedQuantity",
        consumed_unit as "ConsumedUnit",
        contracted_cost as "ContractedCost",
        contracted_unit_price as "ContractedUnitPrice",
        effective_cost as "EffectiveCost",
        host_provider_name as "HostProviderName",
        nullif(invoice_id, '') as "InvoiceId",
        invoice_issuer_name as "InvoiceIssuerName",
        list_cost as "ListCost",
        list_unit_price as "ListUnitPrice",
        pricing_category as "PricingCategory",
        pricing_quantity as "PricingQuantity",
        pricing_unit as "PricingUnit",
        region_id as "RegionId",
        region_name as "RegionName",
        resource_id as "ResourceId",
        resource_name as "ResourceName",
        resource_type as "ResourceType",
        service_category as "ServiceCategory",
        service_name as "ServiceName",
        service_provider_name as "ServiceProviderName",
        sku_id as "SkuId",
        sku_price_id as "SkuPriceId",
        sub_account_id as "SubAccountId",
        sub_account_name as "SubAccountName",
        origin_tags as "Tags",
        -- custom columns (x_ prefix, as FOCUS asks of columns it does not define)
        allocation_id as "x_AllocationId",
        charge_id as "x_OriginChargeId",
        team_id as "x_TeamId",
        project_id as "x_ProjectId",
        user_id as "x_UserId",
        cluster_id as "x_ClusterId",
        node_name as "x_NodeName",
        workload_id as "x_WorkloadId",
        allocation_kind as "x_AllocationKind",
        allocation_basis as "x_AllocationBasis",
        attribution_method as "x_AttributionMethod",
        unallocated_reason as "x_UnallocatedReason",
        allocation_ratio as "x_AllocatedRatio",
        gpu_hours as "x_GpuHours",
        -- the digest of the charge's inputs (not exported: gpucost export-focus leaves them out)
        input_key,
        input_fingerprint
    from described

)

select * from final
