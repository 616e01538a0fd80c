-- GPU telemetry gaps longer than var gpucost_max_sample_gap_seconds and billed node-days without any DCGM
-- sample, published (int_gpu_telemetry_gaps finds them), so an exporter outage is visible next to the money
-- it did not move.
with

gaps as (

    select * from {{ ref('int_gpu_telemetry_gaps') }}

)

select * from gaps
