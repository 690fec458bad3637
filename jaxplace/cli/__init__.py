"""The `jaxplace` command-line tool: one module per subcommand.

`main` is the entry point: `COMMANDS` maps each subcommand to its module, imported when
used. Subcommands: `cmd_info`, `cmd_generate`, `cmd_partition`, `partition_many`
(`partition-many`), `cmd_certify`, `cmd_import`, `cmd_bench`, `cmd_train`,
`cmd_export`, `cmd_warmup`, `cmd_spatial`, `cmd_view`, `cmd_calibrate`. What they
share: `args` (the common arguments and their checks, light to import), `runner`
(Ctrl-C, deadlines and progress bars around long work), `method_names` (a method name
checked before the heavy imports), `partition_cluster` (`partition --cluster`: a model
config split over a cluster).
"""
