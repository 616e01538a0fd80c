-- The learned model's top-3 calibrated candidates for every workload without a declared owner (no valid
-- label, override or rule): the undeclared rows of int_workload_attribution_scores (each scored by the model
-- version attribution_model_version names).
with

scores as (

    select * from {{ ref('int_workload_attribution_scores') }}

),

final as (

    select
        {{ column_list(
            ref('int_workload_attribution_scores'), exclude=['scored_set', 'true_project_id', 'true_team_id']
        ) }}
    from scores
    where scored_set = 'undeclared'

)

select * from final
