-- Every allocation that does not depend on other owners' costs: direct lines, GPU usage, spread idle, the CPU
-- and memory parts of GPU node lines, volumes split over the pods that held their claim, and lines that cannot
-- be placed. Owners resolved; `unallocated` wherever the project is unknown.
{%- set placed_classes = "'direct', 'unallocated'"
    ~ (", 'idle_commitment'" if var('gpucost_idle_policy') in ('visible', 'platform') else "") %}
with

classified as (

    select * from {{ ref('int_bill_lines_classified') }}

),

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

prorated as (

    select * from {{ ref('int_gpu_costs_prorated') }}
    where allocation_kind in ('usage', 'unallocated')

),

idle_spread as (

    select * from {{ ref('int_gpu_idle_costs_spread') }}

),

idle_groups as (

    -- the owner groups a cluster-day's idle is spread to (recipient = owner), with their resolved owner
    select * from {{ ref('int_gpu_idle_weights') }}
    where recipient_group is not null

),

compute_parts as (

    select * from {{ ref('int_node_compute_costs_prorated') }}

),

volume_prorated as (

    select * from {{ ref('int_volume_costs_prorated') }}

),

owners as (

    -- every workload's owner, resolved once; a line's part without a workload (unallocated) has none
    select * from {{ ref('int_workload_owners_resolved') }}

),

direct_and_unplaced as (

    -- direct and unplaceable lines whole; unused commitment whole to its idle owner when the idle policy
    -- names one (visible: __idle__, platform: the platform owner); otherwise it is spread like shared
    select
        classified.charge_id,
        cast(null as string) as workload_id,
        case
            when classified.line_class = 'direct' then classified.direct_team_id
            when classified.line_class = 'idle_commitment' then '{{ idle_commitment_owner('team') }}'
            else '{{ unallocated_owner() }}'
        end as team_id,
        case
            when classified.line_class = 'direct' then classified.direct_project_id
            when classified.line_class = 'idle_commitment' then '{{ idle_commitment_owner('project') }}'
            else '{{ unallocated_owner() }}'
        end as project_id,
        case when classified.line_class = 'direct' then classified.direct_user_id end as user_id,
        case when classified.line_class = 'idle_commitment' then 'idle' else classified.line_class end
            as allocation_kind,
        case
            when classified.line_class = 'idle_commitment' then 'idle_{{ var("gpucost_idle_policy") }}'
            else 'whole_line'
        end as allocation_basis,
        case
            when classified.line_class = 'direct' then 'bill_tag'
            when classified.line_class = 'idle_commitment' then 'policy'
            else 'none'
        end as attribution_method,
        cast(null as string) as attribution_rule_id,
        cast(case when classified.line_class = 'direct' then 1 else 0 end as double) as attribution_confidence,
        classified.unallocated_reason,
        cast(1 as {{ money_type() }}) as allocation_ratio,
        charges.billed_cost,
        charges.effective_cost
    from classified
    inner join charges on classified.charge_id = charges.charge_id
    where classified.line_class in ({{ placed_classes }})

),

usage as (

    select
        prorated.charge_id,
        prorated.workload_id,
        coalesce(owners.team_id, '{{ unallocated_owner() }}') as team_id,
        coalesce(owners.project_id, '{{ unallocated_owner() }}') as project_id,
        owners.user_id,
        case
            when prorated.allocation_kind = 'unallocated' then 'unallocated'
            when owners.is_attributed then 'usage'
            else 'unallocated'
        end as allocation_kind,
        prorated.allocation_basis,
        -- a node line without telemetry is one unallocated row with no workload: no owner, method none
        coalesce(owners.attribution_method, 'none') as attribution_method,
        owners.attribution_rule_id,
        case
            when prorated.allocation_kind = 'unallocated' then cast(0 as double)
            else owners.attribution_confidence
        end as attribution_confidence,
        case
            when prorated.allocation_kind = 'unallocated' then prorated.unallocated_reason
            when not owners.is_attributed
                then 'gpu_usage_of_' || owners.unattributed_reason
        end as unallocated_reason,
        prorated.allocation_ratio,
        prorated.billed_cost,
        prorated.effective_cost
    from prorated
    left join owners on prorated.workload_id = owners.workload_id

),

idle as (

    select
        idle_spread.charge_id,
        idle_spread.workload_id,
        case idle_spread.recipient
            when 'workload' then owners.team_id
            when 'owner' then idle_groups.team_id
            when 'reservation' then idle_spread.team_id
            when 'platform' then '{{ var("gpucost_platform_team_id") }}'
            else '{{ idle_owner() }}'
        end as team_id,
        case idle_spread.recipient
            when 'workload' then owners.project_id
            when 'owner' then idle_groups.project_id
            when 'reservation' then idle_spread.project_id
            when 'platform' then '{{ var("gpucost_platform_project_id") }}'
            else '{{ idle_owner() }}'
        end as project_id,
        owners.user_id,
        case
            when idle_spread.recipient = 'workload' and not owners.is_attributed
                then 'unallocated'
            when idle_spread.recipient = 'owner' and not idle_groups.is_attributed then 'unallocated'
            else 'idle'
        end as allocation_kind,
        case
            when idle_spread.recipient = 'reservation' then 'idle_reservation'
            else 'idle_' || idle_spread.idle_policy
        end as allocation_basis,
        case
            when idle_spread.recipient = 'workload' then owners.attribution_method
            when idle_spread.recipient = 'owner' then idle_groups.attribution_method
            when idle_spread.recipient in ('platform', 'reservation') then 'policy'
            else 'none'
        end as attribution_method,
        case
            when idle_spread.recipient = 'workload' then owners.attribution_rule_id
            when idle_spread.recipient = 'owner' then idle_groups.attribution_rule_id
            when idle_spread.recipient = 'reservation' then idle_spread.reservation_id
        end as attribution_rule_id,
        case idle_spread.recipient
            when 'workload' then owners.attribution_confidence
            when 'owner' then idle_groups.attribution_confidence
            when 'platform' then cast(1 as double)
            when 'reservation' then cast(1 as double)
            else cast(0 as double)
        end as attribution_confidence,
        case
            when idle_spread.recipient = 'workload' and not owners.is_attributed
                then 'gpu_idle_share_of_' || owners.unattributed_reason
            when idle_spread.recipient = 'owner' and not idle_groups.is_attributed
                then 'gpu_idle_share_of_' || idle_groups.unattributed_reason
        end as unallocated_reason,
        idle_spread.allocation_ratio,
        idle_spread.billed_cost,
        idle_spread.effective_cost
    from idle_spread
    left join owners on idle_spread.workload_id = owners.workload_id
    left join idle_groups
        on
        idle_spread.scope_key = idle_groups.scope_key
        and idle_spread.recipient_group = idle_groups.recipient_group

),

compute as (

    -- the CPU and memory parts of GPU node lines: requested by workloads, or their idle (own basis, own idle)
    select
        compute_parts.charge_id,
        compute_parts.workload_id,
        case
            when compute_parts.allocation_kind = 'unallocated' then '{{ unallocated_owner() }}'
            when compute_parts.recipient = 'platform' then '{{ var("gpucost_platform_team_id") }}'
            when compute_parts.recipient = 'unowned' then '{{ idle_owner() }}'
            else owners.team_id
        end as team_id,
        case
            when compute_parts.allocation_kind = 'unallocated' then '{{ unallocated_owner() }}'
            when compute_parts.recipient = 'platform' then '{{ var("gpucost_platform_project_id") }}'
            when compute_parts.recipient = 'unowned' then '{{ idle_owner() }}'
            else owners.project_id
        end as project_id,
        owners.user_id,
        case
            when compute_parts.allocation_kind = 'unallocated' then 'unallocated'
            when compute_parts.recipient in ('platform', 'unowned') then 'idle'
            when owners.is_attributed then compute_parts.allocation_kind
            else 'unallocated'
        end as allocation_kind,
        compute_parts.allocation_basis,
        case
            when compute_parts.recipient = 'platform' then 'policy'
            when compute_parts.allocation_kind = 'unallocated' or compute_parts.recipient = 'unowned' then 'none'
            else owners.attribution_method
        end as attribution_method,
        case when compute_parts.workload_id is not null then owners.attribution_rule_id end as attribution_rule_id,
        case
            when compute_parts.recipient = 'platform' then cast(1 as double)
            when compute_parts.allocation_kind = 'unallocated' or compute_parts.recipient = 'unowned'
                then cast(0 as double)
            else owners.attribution_confidence
        end as attribution_confidence,
        case
            when compute_parts.allocation_kind = 'unallocated' then compute_parts.unallocated_reason
            when compute_parts.workload_id is not null and not owners.is_attributed
                then compute_parts.resource_part || '_'
                    || case when compute_parts.allocation_kind = 'idle' then 'idle_share' else 'usage' end
                    || '_of_' || owners.unattributed_reason
        end as unallocated_reason,
        compute_parts.allocation_ratio,
        compute_parts.billed_cost,
        compute_parts.effective_cost
    from compute_parts
    left join owners on compute_parts.workload_id = owners.workload_id

),

volume as (

    -- a disk behind a PersistentVolume: the pods that held its claim pay by holding time, each under its
    -- workload's owner; nobody held it: unallocated with the reason
    select
        volume_prorated.charge_id,
        volume_prorated.workload_id,
        coalesce(owners.team_id, '{{ unallocated_owner() }}') as team_id,
        coalesce(owners.project_id, '{{ unallocated_owner() }}') as project_id,
        owners.user_id,
        case
            when volume_prorated.allocation_kind = 'unallocated' then 'unallocated'
            when owners.is_attributed then 'usage'
            else 'unallocated'
        end as allocation_kind,
        volume_prorated.allocation_basis,
        case
            when volume_prorated.allocation_kind = 'unallocated' then 'none'
            else owners.attribution_method
        end as attribution_method,
        owners.attribution_rule_id,
        case
            when volume_prorated.allocation_kind = 'unallocated' then cast(0 as double)
            else owners.attribution_confidence
        end as attribution_confidence,
        case
            when volume_prorated.allocation_kind = 'unallocated' then volume_prorated.unallocated_reason
            when not owners.is_attributed
                then 'volume_claim_of_' || owners.unattributed_reason
        end as unallocated_reason,
        volume_prorated.allocation_ratio,
        volume_prorated.billed_cost,
        volume_prorated.effective_cost
    from volume_prorated
    left join owners on volume_prorated.workload_id = owners.workload_id

),

final as (

    select * from direct_and_unplaced
    union all
    select * from usage
    union all
    select * from idle
    union all
    select * from compute
    union all
    select * from volume

)

select * from final
