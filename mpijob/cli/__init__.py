"""The `mpijob` command line (typer + rich); entry point `mpijob.cli.main:app`."""
