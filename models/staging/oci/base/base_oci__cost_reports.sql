-- Every Oracle Cloud cost report in <landing>/billing/oci (reports/cost-csv; CSV, gzip CSV, Parquet),
-- read once, as text, with its file and row.
{{ read_bill_files('billing/oci', oci_columns()) }}
