-- How good the learned attribution is, measured on every build (gpucost.core.attribution):
--   holdout      accuracy on labelled workloads hidden from training (time-based split: trained on the
--                earlier, tested on the later ones), money-weighted by each workload's effective cost;
--                coverage = share of that cost at or above the build's auto_threshold (derived from var
--                gpucost_attribution_target_accuracy, or var gpucost_attribution_auto_threshold if null);
--                expected_calibration_error over ten equal-width confidence bins;
--   reliability  one row per confidence bin: mean confidence against accuracy;
--   confusion    the five most costly (true project, predicted project) mistakes;
--   untagged     the workloads without a valid label in this build: share of their cost placed
--                automatically (rule or model) and by the model alone (accuracy unknowable: no truth).
{%- set threshold = var('gpucost_attribution_auto_threshold') %}
with

holdout as (

    select * from {{ ref('int_workload_attribution_holdout') }}

),

scores as (

    select * from {{ ref('int_workload_attribution_scores') }}

),

build_threshold as (

    select coalesce(max(auto_threshold), {{ threshold }}) as auto_threshold
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

scored as (

    select
        holdout.workload_id,
        holdout.true_project_id,
        holdout.predicted_project_id,
        holdout.attribution_confidence as confidence,
        holdout.predicted_project_id = holdout.true_project_id as is_correct,
        holdout.attribution_confidence >= holdout.auto_threshold as is_auto,
        least(floor(holdout.attribution_confidence * 10), 9) as confidence_bin,
        coalesce(costs.effective_cost, 0) as effective_cost,
        cast(coalesce(costs.effective_cost, 0) as double) as weight
    from holdout
    left join costs on holdout.workload_id = costs.workload_id

),

bins as (

    select
        confidence_bin,
        count(*) as workload_count,
        sum(effective_cost) as effective_cost,
        sum(case when is_auto then effective_cost else 0 end) as auto_effective_cost,
        sum(weight) as weight,
        sum(case when is_correct then weight else 0 end) / nullif(sum(weight), 0) as accuracy,
        avg(case when is_correct then 1.0 else 0.0 end) as accuracy_by_count,
        sum(confidence * weight) / nullif(sum(weight), 0) as mean_confidence
    from scored
    group by 1

),

totals as (

    select
        count(*) as workload_count,
        sum(effective_cost) as effective_cost,
        sum(case when is_auto then effective_cost else 0 end) as auto_effective_cost,
        sum(weight) as weight,
        sum(case when is_auto then weight else 0 end) as auto_weight,
        sum(case when is_auto and is_correct then weight else 0 end) as auto_correct_weight,
        sum(case when is_correct then weight else 0 end) as correct_weight,
        avg(case when is_correct then 1.0 else 0.0 end) as accuracy_by_count,
        sum(confidence * weight) / nullif(sum(weight), 0) as mean_confidence
    from scored

),

calibration as (

    select
        sum(bins.weight / nullif(totals.weight, 0) * abs(bins.accuracy - bins.mean_confidence))
            as expected_calibration_error
    from bins
    cross join totals

),

overall as (

    select
        'holdout' as metric_group,
        'all' as metric_key,
        cast(null as string) as true_project_id,
        cast(null as string) as predicted_project_id,
        cast(null as double) as confidence_bin_low,
        cast(null as double) as confidence_bin_high,
        totals.workload_count,
        totals.effective_cost,
        totals.auto_effective_cost,
        totals.auto_weight / nullif(totals.weight, 0) as coverage,
        totals.auto_correct_weight / nullif(totals.auto_weight, 0) as accuracy,
        totals.correct_weight / nullif(totals.weight, 0) as accuracy_all,
        totals.accuracy_by_count,
        totals.mean_confidence,
        calibration.expected_calibration_error
    from totals
    cross join calibration

),

reliability as (

    select
        'reliability' as metric_group,
        'bin_' || cast(cast(confidence_bin as integer) as string) as metric_key,
        cast(null as string) as true_project_id,
        cast(null as string) as predicted_project_id,
        confidence_bin / 10.0 as confidence_bin_low,
        (confidence_bin + 1) / 10.0 as confidence_bin_high,
        workload_count,
        effective_cost,
        auto_effective_cost,
        cast(null as double) as coverage,
        accuracy,
        cast(null as double) as accuracy_all,
        accuracy_by_count,
        mean_confidence,
        abs(accuracy - mean_confidence) as expected_calibration_error
    from bins

),

confusions as (

    select
        true_project_id,
        predicted_project_id,
        count(*) as workload_count,
        sum(effective_cost) as effective_cost,
        sum(case when is_auto then effective_cost else 0 end) as auto_effective_cost,
        row_number()
            over (
                order by sum(effective_cost) desc, count(*) desc, true_project_id asc, predicted_project_id asc
            )
            as confusion_rank
    from scored
    where not is_correct
    group by 1, 2

),

confusion as (

    select
        'confusion' as metric_group,
        'rank_' || cast(confusion_rank as string) as metric_key,
        true_project_id,
        predicted_project_id,
        cast(null as double) as confidence_bin_low,
        cast(null as double) as confidence_bin_high,
        workload_count,
        effective_cost,
        auto_effective_cost,
        cast(null as double) as coverage,
        cast(null as double) as accuracy,
        cast(null as double) as accuracy_all,
        cast(null as double) as accuracy_by_count,
        cast(null as double) as mean_confidence,
        cast(null as decimal(9, 6)) as expected_calibration_error
    from confusions
    where confusion_rank <= 5

),

untagged_workloads as (

    select
        workloads.attribution_method,
        coalesce(costs.effective_cost, 0) as effective_cost
    from workloads
    left join costs on workloads.workload_id = costs.workload_id
    where workloads.attribution_method not in {{ label_attribution_methods() }}

),

untagged as (

    select
        'untagged' as metric_group,
        'all' as metric_key,
        cast(null as string) as true_project_id,
        cast(null as string) as predicted_project_id,
        cast(null as double) as confidence_bin_low,
        cast(null as double) as confidence_bin_high,
        count(*) as workload_count,
        sum(effective_cost) as effective_cost,
        sum(case when attribution_method in ('rule', 'model') then effective_cost else 0 end)
            as auto_effective_cost,
        cast(sum(case when attribution_method in ('rule', 'model') then effective_cost else 0 end) as double)
        / nullif(cast(sum(effective_cost) as double), 0) as coverage,
        cast(null as double) as accuracy,
        cast(null as double) as accuracy_all,
        cast(null as double) as accuracy_by_count,
        cast(null as double) as mean_confidence,
        cast(null as decimal(9, 6)) as expected_calibration_error
    from untagged_workloads

),

unioned as (

    select * from overall
    union all
    select * from reliability
    union all
    select * from confusion
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
        cast((select build_threshold.auto_threshold from build_threshold) as decimal(9, 6)) as auto_threshold
    from unioned

)

select * from final
