"""The `jaxplace` command-line tool: one module per subcommand."""
