"""The ``pymanus`` command line."""
