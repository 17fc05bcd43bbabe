"""`python -m forensics` runs the CLI."""

from forensics.cli import main

main()
