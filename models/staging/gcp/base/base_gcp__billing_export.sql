-- Every Google Cloud Billing export file in <landing>/billing/gcp (BigQuery export rows as JSON lines,
-- CSV or Parquet), read once, one JSON object text per row, with its file and row.
{{ read_gcp_billing_exports('billing/gcp') }}
