-- MetricFlow's hourly time spine: one row per UTC hour, 2020-01-01 00:00 to 2035-12-31 23:00 (140,256 rows),
-- for the hour-grain time dimension fct_gpu_usage.usage_hour_at. Portable like metricflow_time_spine;
-- on DuckDB alone: `select range as hour_at from range(timestamp '2020-01-01', timestamp '2036-01-01',
-- interval 1 hour)`.
with

hours as (

    {{ dbt.date_spine(
        datepart="hour",
        start_date="cast('2020-01-01 00:00:00' as timestamp)",
        end_date="cast('2036-01-01 00:00:00' as timestamp)",
    ) }}

),

final as (

    select cast(date_hour as timestamp) as hour_at
    from hours

)

select * from final
