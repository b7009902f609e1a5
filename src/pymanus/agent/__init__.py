"""The agent: its loop, events, limits and result."""
