-- One row per workload with its owner: the declared owner (valid label, human override, declarative rule;
-- int_workload_owners_declared) when there is one, else the learned model's prediction when its calibrated
-- confidence reaches the build's auto_threshold (derived from var gpucost_attribution_target_accuracy, or var
-- gpucost_attribution_auto_threshold when the target is null: int_workload_attribution_scores), else the
-- suspense owner when configured (vars gpucost_attribution_suspense_team_id / _project_id), else unattributed
-- with the reason.
-- Team before project: a workload the model cannot place on a project, without a declared team, goes to its most
-- probable team when that team's own calibrated confidence reaches the build's team threshold
-- (team_auto_threshold, from var gpucost_attribution_team_target_accuracy): method model_team, project
-- __unattributed__ (the team's cost, its project still to be found: rpt_attribution_review lists it).
-- Cold start: where neither level placed it, a workload whose own names single out one project (or team) of the
-- org mapping goes to it when that path's precision measured on the labelled workloads reaches the target
-- (declared_match in int_workload_attribution_scores): method cold_start (project) or cold_start_team.
-- Before the model: a workload whose own name (pod, owner) singles out one project of the org mapping goes to it when
-- that path's precision on the labelled workloads reaches the target (declared_match name): method declared_name.
-- Teams over time: a workload of a project the org mapping dates (int_org_project_team_periods) is the team's of
-- the period it started in; else, of a project its pods show handed to another team (int_project_team_handovers),
-- the new team's when it starts at or after the hand-over; whoever placed the project. Otherwise (and for a start
-- outside every dated period) the mapping's current team.
-- attribution_confidence: 1 for declared owners, the model's probability for model owners (the team's for
-- model_team), 0 otherwise.
{%- set suspense_team = var('gpucost_attribution_suspense_team_id') %}
{%- set suspense_project = var('gpucost_attribution_suspense_project_id') %}
with

declared as (

    select * from {{ ref('int_workload_owners_declared') }}

),

predictions as (

    select * from {{ ref('int_workload_attribution_predictions') }}

),

org_mapping as (

    select * from {{ ref('stg_reference__org_mapping') }}

),

handovers as (

    select * from {{ ref('int_project_team_handovers') }}

),

periods as (

    select * from {{ ref('int_org_project_team_periods') }}

),

starts as (

    select
        workload_id,
        started_epoch
    from {{ ref('int_workload_features') }}

),

decided as (

    select
        declared.*,
        predictions.predicted_project_id,
        predictions.attribution_confidence as model_confidence,
        predictions.predicted_team_id,
        predictions.team_confidence,
        predictions.declared_match,
        predictions.attribution_model_version,
        not declared.is_attributed
        and (
            coalesce(predictions.declared_match in ('project', 'name'), false)
            or (
                coalesce(predictions.declared_match, '') != 'team'
                and coalesce(predictions.attribution_confidence >= predictions.auto_threshold, false)
            )
        ) as is_model_owner,
        not declared.is_attributed
        and declared.team_id = '{{ unallocated_owner() }}'
        and coalesce(predictions.declared_match, '') not in ('project', 'name')
        and (
            coalesce(predictions.declared_match = 'team', false)
            or not coalesce(predictions.attribution_confidence >= predictions.auto_threshold, false)
        )
        and predictions.predicted_team_id is not null
        and (
            coalesce(predictions.team_confidence >= predictions.team_auto_threshold, false)
            or coalesce(predictions.declared_match = 'team', false)
        ) as is_team_owner
    from declared
    left join predictions on declared.workload_id = predictions.workload_id

),

owned as (

    select
        decided.workload_id,
        decided.cluster_id,
        case
            when decided.is_model_owner
                then coalesce(org_mapping.team_id, decided.label_team_id, '{{ unallocated_owner() }}')
            when decided.is_team_owner then decided.predicted_team_id
            {%- if suspense_project %}
            when not decided.is_attributed then '{{ suspense_team or unallocated_owner() }}'
            {%- endif %}
            else decided.team_id
        end as team_id,
        case
            when decided.is_model_owner then decided.predicted_project_id
            when decided.is_team_owner then '{{ team_only_project() }}'
            {%- if suspense_project %}
            when not decided.is_attributed then '{{ suspense_project }}'
            {%- endif %}
            else decided.project_id
        end as project_id,
        decided.user_id,
        decided.namespace,
        decided.pod,
        decided.label_project_id,
        decided.label_team_id,
        decided.label_app,
        decided.image_repository,
        case
            when decided.is_model_owner and decided.declared_match = 'project' then 'cold_start'
            when decided.is_model_owner and decided.declared_match = 'name' then 'declared_name'
            when decided.is_model_owner then 'model'
            when decided.is_team_owner and decided.declared_match = 'team' then 'cold_start_team'
            when decided.is_team_owner then 'model_team'
            {%- if suspense_project %}
            when not decided.is_attributed then 'suspense'
            {%- endif %}
            else decided.attribution_method
        end as attribution_method,
        decided.attribution_rule_id,
        cast(case
            when decided.is_attributed then 1
            when decided.is_model_owner then decided.model_confidence
            when decided.is_team_owner then decided.team_confidence
            else 0
        end as double) as attribution_confidence,
        decided.model_confidence,
        case
            when decided.is_model_owner or decided.is_team_owner then decided.attribution_model_version
        end as attribution_model_version,
        case
            when decided.is_attributed or decided.is_model_owner or decided.is_team_owner then null
            else {{ "'suspense_' || " if suspense_project else '' }}decided.unattributed_reason
        end as unattributed_reason,
        {% if suspense_project -%}
            true
        {%- else -%}
            decided.is_attributed or decided.is_model_owner or decided.is_team_owner
        {%- endif %} as is_attributed
    from decided
    left join org_mapping
        on decided.is_model_owner and decided.predicted_project_id = org_mapping.project_id

),

handed_over as (

    select
        owned.*,
        coalesce(periods.team_id, handovers.to_team_id, owned.team_id) as owner_team_id
    from owned
    left join starts on owned.workload_id = starts.workload_id
    left join periods
        on
        owned.project_id = periods.project_id
        and starts.started_epoch >= coalesce(periods.valid_from_epoch, starts.started_epoch)
        and starts.started_epoch < coalesce(periods.valid_to_epoch, starts.started_epoch + 1)
    left join handovers
        on
        owned.project_id = handovers.project_id
        and starts.started_epoch >= handovers.handed_over_epoch

),

final as (

    select
        workload_id,
        cluster_id,
        owner_team_id as team_id,
        project_id,
        user_id,
        owner_team_id || '|' || project_id as owner_key,
        namespace,
        pod,
        label_project_id,
        label_team_id,
        label_app,
        image_repository,
        attribution_method,
        attribution_rule_id,
        attribution_confidence,
        model_confidence,
        attribution_model_version,
        unattributed_reason,
        is_attributed
    from handed_over

)

select * from final
