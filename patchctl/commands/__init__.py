"""One module per subcommand; each imports its heavy dependencies lazily."""
