-- Quarantined records, by kind and reason, with how many and how much bill money they hold.
-- Warns by default; set var gpucost_quarantine_severity: error to fail the build instead.
{{ config(severity=var('gpucost_quarantine_severity', 'warn')) }}

select
    source_kind,
    quarantine_reason,
    sum(record_count) as records,
    count(distinct source_file) as files,
    sum(billed_cost) as billed_cost
from {{ ref('rpt_quarantine') }}
group by 1, 2
