"""The ``browy`` command line: its subcommands and the terminal client."""
