-- Every AWS Cost and Usage Report file in <landing>/billing/aws_cur (legacy CUR and CUR 2.0 / Data
-- Exports; CSV, gzip CSV, Parquet), read once, as text, with its file and row.
{{ read_bill_files('billing/aws_cur', aws_cur_columns()) }}
