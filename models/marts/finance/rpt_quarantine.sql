-- Everything that could not be used, and why, published (int_records_quarantined finds it): bill lines one
-- by one, telemetry samples grouped by file, metric and reason, Slurm records one by one.
with

quarantined as (

    select * from {{ ref('int_records_quarantined') }}

)

select * from quarantined
