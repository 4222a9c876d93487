"""The ``evgrid`` command line. Each subcommand is a module ``cmd_<name>.py`` here."""
