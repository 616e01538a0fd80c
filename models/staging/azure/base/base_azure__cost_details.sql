-- Every Azure Cost Management export in <landing>/billing/azure (EA and MCA; actual and amortised cost;
-- CSV, gzip CSV, Parquet), read once, as text, with its file and row.
{{ read_bill_files('billing/azure', azure_columns()) }}
