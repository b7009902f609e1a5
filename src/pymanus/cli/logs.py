"""Structured log records on the terminal for ``--verbose``: message plus ``key=value`` fields."""

from __future__ import annotations

import logging
import sys

# Attributes every LogRecord has; anything else was passed through ``extra=``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class KeyValueFormatter(logging.Formatter):
    """``LEVEL logger: message key=value ...`` with the record's structured fields."""

    def format(self, record: logging.LogRecord) -> str:
        base = f"{record.levelname} {record.name}: {record.getMessage()}"
        fields = " ".join(f"{key}={value}" for key, value in vars(record).items() if key not in _STANDARD)
        text = f"{base} {fields}" if fields else base
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def enable_verbose_logging() -> None:
    """Send PyManus's INFO records (model calls, tool calls, trims) to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter())
    logger = logging.getLogger("pymanus")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
