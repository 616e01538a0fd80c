-- MetricFlow's time spine: one row per day, 2020-01-01 to 2035-12-31 (day grain, 5,844 rows).
-- dbt.date_spine is dbt's cross-database macro (a generated series of integers added to the start date),
-- so the model runs on any adapter. On DuckDB alone the same rows are
-- `select cast(range as date) as date_day from range(date '2020-01-01', date '2036-01-01', interval 1 day)`.
with

days as (

    {{ dbt.date_spine(
        datepart="day",
        start_date="cast('2020-01-01' as date)",
        end_date="cast('2036-01-01' as date)",
    ) }}

),

final as (

    select cast(date_day as date) as date_day
    from days

)

select * from final
