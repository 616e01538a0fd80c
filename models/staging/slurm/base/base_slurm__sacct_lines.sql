-- Every line of every sacct dump under <landing>/scheduler/slurm, split on `|`, with its file's header.
{{ read_slurm_sacct('scheduler/slurm') }}
