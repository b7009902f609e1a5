"""Context management: token counting and what of the history is sent each call."""
