"""``python -m pymanus`` runs the command line."""

from pymanus.cli.app import main

main()
