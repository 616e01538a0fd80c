"""The `gpucost` command and its subcommands: build, publish, report, gate, collect, statements."""
