-- The hold-outs (rows of int_workload_attribution_scores, the same training as the predictions);
-- true_project_id is their label, rpt_attribution_quality scores them:
--   holdout         the latest labelled workloads, hidden from the regression, predicted with confidences
--                   calibrated on the other folds of the hold-out;
--   person_holdout  the workloads of whole people and namespaces withheld (a seeded draw among the
--                   training workloads), scored by a model that read none of their labels.
with

scores as (

    select * from {{ ref('int_workload_attribution_scores') }}

),

final as (

    select * from scores
    where scored_set in ('holdout', 'person_holdout')

)

select * from final
