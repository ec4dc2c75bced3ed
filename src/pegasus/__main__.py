"""`python -m pegasus` runs the CLI."""

from pegasus.cli import app

app()
