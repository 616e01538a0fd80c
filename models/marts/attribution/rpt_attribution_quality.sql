-- How good the learned attribution is, measured on every build. The holdout, reliability and confusion
-- groups are int_workload_attribution_quality's rows (gpucost.core.attribution.quality: the one definition,
-- shared with `gpucost benchmark-attribution`):
--   holdout      accuracy on labelled workloads hidden from training (time-based split: trained on the
--                earlier, tested on the later ones), money-weighted by each workload's effective cost;
--                coverage = share of that cost at or above the build's auto_threshold (derived from var
--                gpucost_attribution_target_accuracy, or var gpucost_attribution_auto_threshold if null);
--                expected_calibration_error over ten equal-width confidence bins, beside the ECE a perfectly
--                calibrated model would show on the same workloads (ece_if_calibrated: the median of seeded
--                draws, ece_if_calibrated_p90 their 90th percentile: an ECE within it is no evidence of
--                miscalibration, a few costly workloads dominate a small hold-out);
--   reliability  one row per confidence bin: mean confidence against accuracy;
--   confusion    the five most costly (true project, predicted project) mistakes;
--   person_holdout, support_class: int_workload_attribution_quality (the hold-out of whole people; per
--                support class, estimated against measured accuracy);
--   team_holdout the same hold-out at the team level (key `team`): the most probable team (its projects'
--                probabilities summed, calibrated on its own) against the labelled project's team, coverage at
--                the build's team threshold (var gpucost_attribution_team_target_accuracy);
-- and this model adds
--   untagged     the workloads without a valid label in this build: share of their cost placed
--                automatically (key `all`: rule, model, cold_start or declared_name, on a project; key
--                `team`: at least on a team: also model_team, cold_start_team, and the pod's own team label,
--                which keeps the money of a workload nobody placed on that team; key `team_label`: by that
--                label alone). Accuracy unknowable here: no truth.
{%- set threshold = var('gpucost_attribution_auto_threshold') %}
with

quality as (

    select * from {{ ref('int_workload_attribution_quality') }}

),

scores as (

    select * from {{ ref('int_workload_attribution_scores') }}

),

build_threshold as (

    select
        coalesce(max(auto_threshold), {{ threshold }}) as auto_threshold,
        max(team_auto_threshold) as team_auto_threshold
    from scores

),

workloads as (

    select * from {{ ref('int_workloads') }}

),

allocations as (

    select * from {{ ref('fct_cost_allocation') }}
    where workload_id is not null

),

costs as (

    select
        workload_id,
        sum(effective_cost) as effective_cost
    from allocations
    group by 1

),

untagged_workloads as (

    select
        workloads.attribution_method,
        -- nobody placed it, but its pod's team label keeps its money on that team (int_workloads)
        workloads.attribution_method = 'none'
        and workloads.label_team_id is not null
        and workloads.team_id = workloads.label_team_id as is_label_team,
        coalesce(costs.effective_cost, 0) as effective_cost
    from workloads
    left join costs on workloads.workload_id = costs.workload_id
    where workloads.attribution_method not in {{ label_attribution_methods() }}

),

untagged_levels as (

    -- the methods that place the untagged cost on a project (all), at least on a team (team), and the
    -- pod's own team label alone (team_label)
    select
        'all' as metric_key,
        untagged_workloads.*,
        untagged_workloads.attribution_method in ('rule', {{ learned_project_methods() }}) as is_placed
    from untagged_workloads
    union all
    select
        'team' as metric_key,
        untagged_workloads.*,
        untagged_workloads.attribution_method in ('rule', {{ learned_project_methods() }}, {{ learned_team_methods() }})
        or untagged_workloads.is_label_team as is_placed
    from untagged_workloads
    union all
    select
        'team_label' as metric_key,
        untagged_workloads.*,
        untagged_workloads.is_label_team as is_placed
    from untagged_workloads

),

untagged as (

    select
        'untagged' as metric_group,
        metric_key,
        cast(null as string) as true_project_id,
        cast(null as string) as predicted_project_id,
        cast(null as double) as confidence_bin_low,
        cast(null as double) as confidence_bin_high,
        count(*) as workload_count,
        sum(effective_cost) as effective_cost,
        sum(case when is_placed then effective_cost else 0 end) as auto_effective_cost,
        cast(sum(case when is_placed then effective_cost else 0 end) as double)
        / nullif(cast(sum(effective_cost) as double), 0) as coverage,
        cast(null as double) as accuracy,
        cast(null as double) as accuracy_all,
        cast(null as double) as accuracy_by_count,
        cast(null as double) as mean_confidence,
        cast(null as decimal(9, 6)) as expected_calibration_error,
        cast(null as double) as ece_if_calibrated,
        cast(null as double) as ece_if_calibrated_p90
    from untagged_levels
    group by 1, 2

),

unioned as (

    select
        metric_group,
        metric_key,
        true_project_id,
        predicted_project_id,
        confidence_bin_low,
        confidence_bin_high,
        workload_count,
        effective_cost,
        auto_effective_cost,
        coverage,
        accuracy,
        accuracy_all,
        accuracy_by_count,
        mean_confidence,
        expected_calibration_error,
        ece_if_calibrated,
        ece_if_calibrated_p90
    from quality
    union all
    select * from untagged

),

final as (

    select
        metric_group,
        metric_key,
        true_project_id,
        predicted_project_id,
        cast(workload_count as bigint) as workload_count,
        cast(coalesce(effective_cost, 0) as {{ money_type() }}) as effective_cost,
        cast(coalesce(auto_effective_cost, 0) as {{ money_type() }}) as auto_effective_cost,
        cast(confidence_bin_low as decimal(9, 6)) as confidence_bin_low,
        cast(confidence_bin_high as decimal(9, 6)) as confidence_bin_high,
        cast(coverage as decimal(9, 6)) as coverage,
        cast(accuracy as decimal(9, 6)) as accuracy,
        cast(accuracy_all as decimal(9, 6)) as accuracy_all,
        cast(accuracy_by_count as decimal(9, 6)) as accuracy_by_count,
        cast(mean_confidence as decimal(9, 6)) as mean_confidence,
        cast(expected_calibration_error as decimal(9, 6)) as expected_calibration_error,
        cast(ece_if_calibrated as decimal(9, 6)) as ece_if_calibrated,
        cast(ece_if_calibrated_p90 as decimal(9, 6)) as ece_if_calibrated_p90,
        cast((select build_threshold.auto_threshold from build_threshold) as decimal(9, 6)) as auto_threshold,
        cast((select build_threshold.team_auto_threshold from build_threshold) as decimal(9, 6))
            as team_auto_threshold
    from unioned

)

select * from final
