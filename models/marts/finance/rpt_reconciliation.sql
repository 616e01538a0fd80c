-- Does the allocation add back up to the bill? One row per provider, billing account, billing month,
-- invoice and currency: the bill's totals (every line whose money parses), the allocated totals, the
-- quarantined bucket, and the residual = bill - allocated - quarantined (must be exactly 0).
with

charges as (

    select * from {{ ref('int_bill_line_items') }}

),

allocations as (

    select * from {{ ref('fct_cost_allocation') }}

),

bill as (

    select
        provider_name,
        coalesce(billing_account_id, '') as billing_account_id,
        billing_period_start,
        invoice_id,
        coalesce(billing_currency, '') as billing_currency,
        count(case when not is_superseded then 1 end) as bill_line_count,
        count(case when quarantine_reason is not null and not is_superseded then 1 end) as quarantined_line_count,
        count(case when is_superseded and not is_duplicate then 1 end) as superseded_line_count,
        count(case when is_duplicate then 1 end) as duplicate_line_count,
        sum(case when is_duplicate then billed_cost end) as duplicated_billed_cost,
        sum(case when not is_superseded then billed_cost end) as billed_cost,
        sum(case when not is_superseded then effective_cost end) as effective_cost,
        sum(case when quarantine_reason is not null and not is_superseded then billed_cost end)
            as quarantined_billed_cost,
        sum(case when quarantine_reason is not null and not is_superseded then effective_cost end)
            as quarantined_effective_cost
    from charges
    group by 1, 2, 3, 4, 5

),

allocated as (

    select
        provider_name,
        coalesce(billing_account_id, '') as billing_account_id,
        billing_period_start,
        invoice_id,
        billing_currency,
        count(distinct charge_id) as allocated_line_count,
        count(*) as allocation_row_count,
        sum(billed_cost) as billed_cost,
        sum(effective_cost) as effective_cost,
        sum(case when allocation_kind = 'unallocated' then billed_cost else 0 end) as unallocated_billed_cost,
        sum(case when allocation_kind = 'idle' then billed_cost else 0 end) as idle_billed_cost
    from allocations
    group by 1, 2, 3, 4, 5

),

final as (

    select
        md5(
            coalesce(bill.provider_name, allocated.provider_name) || '|'
            || coalesce(bill.billing_account_id, allocated.billing_account_id) || '|'
            || coalesce(cast(coalesce(bill.billing_period_start, allocated.billing_period_start) as string), '')
            || '|' || coalesce(bill.invoice_id, allocated.invoice_id)
            || '|' || coalesce(bill.billing_currency, allocated.billing_currency)
        ) as reconciliation_id,
        coalesce(bill.provider_name, allocated.provider_name) as provider_name,
        coalesce(bill.billing_account_id, allocated.billing_account_id) as billing_account_id,
        coalesce(bill.invoice_id, allocated.invoice_id) as invoice_id,
        coalesce(bill.billing_currency, allocated.billing_currency) as billing_currency,
        coalesce(bill.bill_line_count, 0) as bill_line_count,
        coalesce(bill.quarantined_line_count, 0) as quarantined_line_count,
        coalesce(bill.superseded_line_count, 0) as superseded_line_count,
        coalesce(bill.duplicate_line_count, 0) as duplicate_line_count,
        coalesce(allocated.allocated_line_count, 0) as allocated_line_count,
        coalesce(allocated.allocation_row_count, 0) as allocation_row_count,
        cast(coalesce(bill.billed_cost, 0) as {{ money_type() }}) as billed_cost,
        cast(coalesce(allocated.billed_cost, 0) as {{ money_type() }}) as allocated_billed_cost,
        cast(coalesce(bill.quarantined_billed_cost, 0) as {{ money_type() }}) as quarantined_billed_cost,
        cast(coalesce(bill.duplicated_billed_cost, 0) as {{ money_type() }}) as duplicated_billed_cost,
        cast(
            coalesce(bill.billed_cost, 0) - coalesce(allocated.billed_cost, 0)
            - coalesce(bill.quarantined_billed_cost, 0) as {{ money_type() }}
        ) as billed_residual,
        cast(coalesce(bill.effective_cost, 0) as {{ money_type() }}) as effective_cost,
        cast(coalesce(allocated.effective_cost, 0) as {{ money_type() }}) as allocated_effective_cost,
        cast(coalesce(bill.quarantined_effective_cost, 0) as {{ money_type() }}) as quarantined_effective_cost,
        cast(
            coalesce(bill.effective_cost, 0) - coalesce(allocated.effective_cost, 0)
            - coalesce(bill.quarantined_effective_cost, 0) as {{ money_type() }}
        ) as effective_residual,
        cast(coalesce(allocated.idle_billed_cost, 0) as {{ money_type() }}) as idle_billed_cost,
        cast(coalesce(allocated.unallocated_billed_cost, 0) as {{ money_type() }}) as unallocated_billed_cost,
        coalesce(bill.billed_cost, 0)
        = coalesce(allocated.billed_cost, 0) + coalesce(bill.quarantined_billed_cost, 0)
        and coalesce(bill.effective_cost, 0)
        = coalesce(allocated.effective_cost, 0) + coalesce(bill.quarantined_effective_cost, 0) as is_reconciled,
        coalesce(bill.billing_period_start, allocated.billing_period_start) as billing_period_start
    from bill
    full outer join allocated
        on bill.provider_name = allocated.provider_name
        and bill.billing_account_id = allocated.billing_account_id
        and bill.billing_period_start is not distinct from allocated.billing_period_start
        and bill.invoice_id = allocated.invoice_id
        and bill.billing_currency = allocated.billing_currency

)

select * from final
