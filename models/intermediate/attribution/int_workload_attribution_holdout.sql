-- The time-based hold-out: the latest labelled workloads, hidden from the regression, predicted with
-- confidences calibrated on the other folds of the hold-out; true_project_id is their label. The hold-out
-- rows of int_workload_attribution_scores (the same training as the predictions); rpt_attribution_quality
-- scores it.
with

scores as (

    select * from {{ ref('int_workload_attribution_scores') }}

),

final as (

    select {{ column_list(ref('int_workload_attribution_scores'), exclude=['scored_set']) }}
    from scores
    where scored_set = 'holdout'

)

select * from final
