-- The allocation as FOCUS 1.3 split cost allocation rows: one row per fct_cost_allocation row, carrying
-- the origin charge's FOCUS columns, the allocated row's BilledCost and EffectiveCost (exact), the
-- Allocated* columns and x_-prefixed custom columns. The rows of one origin charge sum exactly to its
-- BilledCost and EffectiveCost, and the AllocatedRatio values in their AllocatedMethodDetails sum to 1.
with

allocations as (

    select * from {{ ref('fct_cost_allocation') }}

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

joined as (

    select
        allocations.*,
        charges.billing_account_name,
        charges.charge_description,
        charges.resource_name,
        charges.resource_type,
        charges.region_id,
        charges.billing_period_start_at,
        charges.billing_period_end_at
    from allocations
    inner join charges on allocations.charge_id = charges.charge_id

),

described as (

    select
        *,
        'gpucost/' || allocation_kind || '/' || allocation_basis as allocated_method_id,
        -- built as text: DuckDB's nested json_object / json_array pass a DECIMAL through a DOUBLE, which
        -- would round the ratio; cast(decimal as string) keeps all 18 places
        '{"Elements":[{"AllocatedRatio":' || cast(allocation_ratio as string)
        || ',"x_AllocationKind":' || cast(to_json(allocation_kind) as string)
        || ',"x_AllocationBasis":' || cast(to_json(allocation_basis) as string)
        || ',"x_AttributionMethod":' || cast(to_json(attribution_method) as string)
        || '}]}' as allocated_method_details,
        -- the owner as the bill's own tag keys; keys without a value are left out (merge-patch drops nulls)
        cast(json_merge_patch('{}', json_object(
            '{{ var("gpucost_tag_key_team") }}', team_id,
            '{{ var("gpucost_tag_key_project") }}', project_id,
            '{{ var("gpucost_tag_key_user") }}', user_id
        )) as string) as allocated_tags,
        split_part(workload_id, '/', 3) as workload_pod_name
    from joined

),

final as (

    select
        -- origin charge (FOCUS)
        billing_account_id as "BillingAccountId",
        billing_account_name as "BillingAccountName",
        sub_account_id as "SubAccountId",
        nullif(invoice_id, '') as "InvoiceId",
        provider_name as "ProviderName",
        service_name as "ServiceName",
        service_category as "ServiceCategory",
        charge_category as "ChargeCategory",
        charge_description as "ChargeDescription",
        resource_id as "ResourceId",
        resource_name as "ResourceName",
        resource_type as "ResourceType",
        region_id as "RegionId",
        billing_currency as "BillingCurrency",
        -- this allocated row's money (exact)
        billed_cost as "BilledCost",
        effective_cost as "EffectiveCost",
        -- split cost allocation (FOCUS 1.3)
        allocated_method_id as "AllocatedMethodId",
        allocated_method_details as "AllocatedMethodDetails",
        workload_id as "AllocatedResourceId",
        nullif(workload_pod_name, '') as "AllocatedResourceName",
        allocated_tags as "AllocatedTags",
        -- periods of the origin charge
        billing_period_start_at as "BillingPeriodStart",
        billing_period_end_at as "BillingPeriodEnd",
        charge_period_start_at as "ChargePeriodStart",
        charge_period_end_at as "ChargePeriodEnd",
        -- custom columns (x_ prefix, as FOCUS asks of provider-specific columns)
        allocation_id as "x_AllocationId",
        charge_id as "x_OriginChargeId",
        team_id as "x_TeamId",
        project_id as "x_ProjectId",
        user_id as "x_UserId",
        cluster_id as "x_ClusterId",
        node_name as "x_NodeName",
        allocation_kind as "x_AllocationKind",
        allocation_basis as "x_AllocationBasis",
        attribution_method as "x_AttributionMethod",
        unallocated_reason as "x_UnallocatedReason",
        allocation_ratio as "x_AllocatedRatio"
    from described

)

select * from final
