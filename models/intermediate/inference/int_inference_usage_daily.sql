-- What each serving pod served per day (UTC): the hourly counter increases of its series added up by
-- measure. Tokens in (prompt) and out (generated) come from vLLM and TGI; Triton counts requests and
-- inferences, not tokens. Successful requests: vLLM's finished requests (every finished_reason), TGI's
-- successes, Triton's successes.
with

counters as (

    select * from {{ ref('stg_serving__counter_increases') }}

),

final as (

    select
        pod_key,
        usage_date,
        sum(case when measure = 'prompt_tokens' then counter_increase else 0 end) as prompt_tokens,
        sum(case when measure = 'generation_tokens' then counter_increase else 0 end) as generation_tokens,
        sum(case when measure = 'requests_succeeded' then counter_increase else 0 end) as request_count,
        sum(case when measure = 'requests_failed' then counter_increase else 0 end) as failed_request_count,
        sum(case when measure = 'inferences' then counter_increase else 0 end) as inference_count,
        sum(reset_count) as counter_reset_count
    from counters
    group by 1, 2

)

select * from final
