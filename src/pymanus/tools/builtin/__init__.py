"""The tools PyManus ships with."""
