-- Every usable bill line with the path its money takes:
--   gpu_node     the resource is a node we have telemetry for: prorated by GPU time (Python model)
--   direct       tagged with a known project: goes to that project whole
--   volume_claim untagged (or tagged with an unknown project) and its resource is the cloud disk behind a
--                Kubernetes PersistentVolume: split over the pods that held the claim (int_volume_claim_lines)
--   shared       untagged storage, network, support, tax, credits...: spread by owners' direct cost
--   unallocated  cannot be placed (bad charge period, GPU instance without telemetry, unknown project tag)
--   idle_commitment  unused commitment (CommitmentDiscountStatus Unused: Azure UnusedReservation /
--                UnusedSavingsPlan, FOCUS Unused rows): placed by the idle policy, like idle GPU time
with

charges as (

    select * from {{ ref('int_bill_line_items') }}
    where quarantine_reason is null

),

kube_nodes as (

    select * from {{ ref('stg_kube__nodes') }}

),

gpu_nodes as (

    select * from {{ ref('int_gpu_nodes') }}

),

nodes as (

    -- kube nodes (the bill names the instance behind them), and GPU nodes outside kube (Slurm, bare metal)
    -- that the bill names by host name
    select
        node_id,
        cluster_id,
        node_name,
        instance_id,
        provider_id
    from kube_nodes
    union all
    select
        node_id,
        cluster_id,
        node_name,
        null as instance_id,
        null as provider_id
    from gpu_nodes
    where node_id not in (select kube_nodes.node_id from kube_nodes)

),

persistent_volumes as (

    select * from {{ ref('stg_kube__persistent_volumes') }}
    where volume_key is not null

),

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

),

gpu_instance_types as (

    select * from {{ ref('gpu_instance_types') }}

),

mapping_size as (

    select count(*) as known_projects from org_mapping

),

node_matches as (

    select
        charges.charge_id,
        min(nodes.node_id) as node_id,
        min(nodes.cluster_id) as cluster_id,
        min(nodes.node_name) as node_name
    from charges
    inner join nodes
        on charges.resource_id in (nodes.instance_id, nodes.provider_id, nodes.node_name)
        -- a GPU node outside kube (Slurm on EC2, e.g. AWS ParallelCluster): the bill names the instance and
        -- carries the host name Slurm and DCGM know as the resource's name
        or (nodes.instance_id is null and charges.resource_name = nodes.node_name)
    group by 1

),

volume_matches as (

    -- the bill names the disk (vol-0abc, an ARN, a GCP self-link, an Azure resource id): macro volume_key
    select
        charges.charge_id,
        min(persistent_volumes.volume_key) as volume_key,
        min(persistent_volumes.cluster_id) as cluster_id
    from charges
    inner join persistent_volumes
        on {{ volume_key('charges.resource_id') }} = persistent_volumes.volume_key
    group by 1

),

gpu_type_matches as (

    -- the type as a whole word in the line's text. instr() first: the pattern is built per type, and compiling
    -- it for every pair of line and type took 6.2 of this model's 6.5 s on the demo month (14,887 lines x 25
    -- types), while a line names one type at most, so few pairs reach the pattern
    select
        charges.charge_id,
        min(gpu_instance_types.instance_type) as instance_type
    from charges
    inner join gpu_instance_types
        on
        instr(
            coalesce(charges.charge_description, '') || ' ' || coalesce(charges.sku_id, ''),
            gpu_instance_types.instance_type
        ) > 0
        and {{ regexp_search() }}(
            coalesce(charges.charge_description, '') || ' ' || coalesce(charges.sku_id, ''),
            '(^|[^A-Za-z0-9._-])' || replace(gpu_instance_types.instance_type, '.', '\.') || '($|[^A-Za-z0-9._-])'
        )
    group by 1

),

tagged as (

    select
        charges.*,
        lower(trim(charges.tag_project_id)) as tag_project_norm,
        lower(trim(charges.tag_team_id)) as tag_team_norm,
        lower(trim(charges.tag_user_id)) as tag_user_norm
    from charges

),

classified as (

    select
        tagged.charge_id,
        node_matches.node_id,
        coalesce(node_matches.cluster_id, volume_matches.cluster_id) as cluster_id,
        node_matches.node_name,
        volume_matches.volume_key,
        gpu_type_matches.instance_type as gpu_instance_type,
        case
            when tagged.tag_project_norm is null then null
            when mapping_size.known_projects = 0 then tagged.tag_project_norm
            else org_mapping.project_id
        end as direct_project_id,
        coalesce(org_mapping.team_id, tagged.tag_team_norm) as direct_team_id,
        tagged.tag_user_norm as direct_user_id,
        tagged.tag_project_norm,
        tagged.invalid_period_reason,
        tagged.commitment_discount_status,
        tagged.charge_category,
        tagged.native_charge_type,
        tagged.source_format,
        lower(concat_ws(
            ' ', tagged.service_category, tagged.service_name, tagged.charge_description, tagged.resource_type,
            tagged.pricing_unit
        )) as line_text
    from tagged
    cross join mapping_size
    left join node_matches on tagged.charge_id = node_matches.charge_id
    left join volume_matches on tagged.charge_id = volume_matches.charge_id
    left join gpu_type_matches on tagged.charge_id = gpu_type_matches.charge_id
    left join org_mapping on tagged.tag_project_norm = org_mapping.project_id

),

final as (

    select
        charge_id,
        case
            when invalid_period_reason is not null then 'unallocated'
            when commitment_discount_status = 'Unused' then 'idle_commitment'
            when node_id is not null then 'gpu_node'
            when gpu_instance_type is not null then 'unallocated'
            when direct_project_id is not null then 'direct'
            when volume_key is not null then 'volume_claim'
            when tag_project_norm is not null then 'unallocated'
            else 'shared'
        end as line_class,
        case
            when invalid_period_reason is not null then invalid_period_reason
            when commitment_discount_status = 'Unused' then null
            when node_id is not null then null
            when gpu_instance_type is not null then 'gpu_resource_without_telemetry: ' || gpu_instance_type
            when direct_project_id is not null then null
            when volume_key is not null then null
            when tag_project_norm is not null then 'unknown_project_tag: ' || tag_project_norm
        end as unallocated_reason,
        node_id,
        cluster_id,
        node_name,
        -- the PersistentVolume disk the resource is (used only when line_class = volume_claim)
        volume_key,
        direct_project_id,
        coalesce(direct_team_id, '{{ unallocated_owner() }}') as direct_team_id,
        direct_user_id,
        -- what the money bought, for finance: first match wins (a GPU credit is a credit)
        case
            when charge_category = 'Credit' or native_charge_type in (
                    'Credit', 'Refund', 'EdpDiscount', 'BundledDiscount', 'PrivateRateDiscount',
                    'DistributorDiscount'
                ) then 'credits'
            when charge_category in ('Tax', 'Purchase', 'Adjustment')
                or {{ regexp_search() }}(line_text, 'support|rounding') then 'support_tax_fees'
            when {{ regexp_search() }}(line_text, '\benergy\b|kwh') then 'energy'
            when {{ regexp_search() }}(line_text, 'licen[cs]e|marketplace|software') then 'licensing'
            when node_id is not null or gpu_instance_type is not null
                or {{ regexp_search() }}(line_text, 'gpu|nvidia|tesla|a100|h100|h200|v100|l40s?\b')
                then 'compute_gpu'
            when {{ regexp_search() }}(
                    line_text, 'network|transfer|bandwidth|egress|ingress|load balanc|vpc|nat gateway|peering|cdn|dns'
                ) then 'network'
            when {{ regexp_search() }}(line_text, 'storage|\bs3\b|ebs|disk|blob|snapshot|volume|backup') then 'storage'
            when {{ regexp_search() }}(line_text, 'memory|\bram\b') then 'compute_memory'
            when {{ regexp_search() }}(line_text, 'compute|ec2|virtual machine|instance|vcpu|cpu|\bvm\b')
                then 'compute_cpu'
            else 'other'
        end as cost_component
    from classified

)

select * from final
