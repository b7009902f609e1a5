"""PyManus: a general-purpose autonomous AI agent."""
