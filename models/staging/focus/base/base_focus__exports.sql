-- Every FOCUS export file in <landing>/billing/focus, read once, as text, with its file and row.
{{ read_focus_exports('billing/focus') }}
