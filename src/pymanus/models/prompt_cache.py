"""Keeping more of a local model's KV cache from one agent step to the next.

The context keeps the tokens of the last prompt and reply; a call evaluates only what follows
the longest common prefix with them (:func:`common_prefix`). Two things broke that prefix at
every step, each costing the last reply again (70 tokens, 2 s on 2 cores):

* tokenized again, a reply is not the tokens it was sampled as: sampling, under a grammar
  most of all, spells text the tokenizer would split otherwise (``<tool_call>`` as ``<``,
  ``tool``, ``_call``, ``>``). :class:`ReplyTokens` remembers each reply's own tokens and
  splices them into later prompts, which is also what the model saw when it went on;
* the agent's reminder closes one prompt and is gone from the next, where the reply takes
  its place. :func:`skipped_span` finds the reminder's span so the runtime can drop it from
  the cache and shift the reply's tokens back. The reply kept this way was computed while the
  reminder was there: what the model saw when it wrote it, not what a fresh evaluation of
  the new prompt would give.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MIN_SHIFTED = 8
"""Fewest cached tokens after a dropped span worth keeping (:func:`skipped_span`); also the
fewest tokens of a reply worth remembering (:class:`ReplyTokens`)."""
MAX_REPLIES = 256
"""Replies whose tokens a loaded model remembers (the oldest go first)."""


def common_prefix(first: Sequence[int] | np.ndarray[Any, Any], second: Sequence[int] | np.ndarray[Any, Any]) -> int:
    """How many leading tokens ``first`` and ``second`` have in common."""
    import numpy as np

    n = min(len(first), len(second))
    if n == 0:
        return 0
    differ = np.nonzero(np.asarray(first[:n]) != np.asarray(second[:n]))[0]
    return int(differ[0]) if len(differ) else n


def skipped_span(
    cached: Sequence[int] | np.ndarray[Any, Any], prompt: Sequence[int] | np.ndarray[Any, Any], start: int
) -> tuple[int, int]:
    """``(gap, kept)``: from ``start``, ``prompt`` goes on with all the cached tokens after ``gap`` of them.

    ``cached`` is head + reminder + reply, ``prompt`` head + reply + tool result; ``start``
    is where they part, and the ``kept`` tokens run to the end of the cache: only the reply
    just generated is kept, never a piece from the middle of another conversation that shared
    the context. ``(0, 0)`` when there is no such span or it would keep fewer than
    :data:`MIN_SHIFTED` tokens.
    """
    import numpy as np

    if start >= len(prompt) or start >= len(cached) - MIN_SHIFTED:
        return 0, 0
    tail, rest = np.asarray(cached[start + 1 :]), np.asarray(prompt[start:])
    for offset in np.nonzero(tail == rest[0])[0]:
        kept = len(tail) - int(offset)
        if kept < MIN_SHIFTED:
            break
        if common_prefix(tail[offset:], rest) == kept:
            return int(offset) + 1, kept
    return 0, 0


class ReplyTokens:
    """Texts a model generated and the tokens it sampled them as; thread-safe."""

    def __init__(self) -> None:
        self._tokens: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    def remember(self, text: str, tokens: list[int]) -> None:
        """Keep ``tokens`` for ``text``; a text sampled again keeps its first tokens, which the cache holds."""
        if len(tokens) < MIN_SHIFTED or not text:
            return
        with self._lock:
            if text in self._tokens:
                return
            if len(self._tokens) >= MAX_REPLIES:
                self._tokens.pop(next(iter(self._tokens)))
            self._tokens[text] = tokens

    def known(self) -> dict[str, list[int]]:
        """A copy of the remembered replies."""
        with self._lock:
            return dict(self._tokens)

    def splice(self, prompt: str, tokenize: Callable[[str, bool], list[int]]) -> list[int]:
        """``prompt``'s tokens with each remembered reply in it as its own tokens.

        ``tokenize(text, bos)`` tokenizes the rest, ``bos`` true for the prompt's first piece.
        """
        spans = []
        for text, tokens in self.known().items():
            at = prompt.find(text)
            while at != -1:
                spans.append((at, at + len(text), tokens))
                at = prompt.find(text, at + len(text))
        spans.sort(key=lambda span: (span[0], -span[1]))  # by start; the longest first
        out: list[int] = []
        done = 0
        for start, end, tokens in spans:
            if start < done:
                continue  # inside a reply already spliced
            out += tokenize(prompt[done:start], done == 0) + tokens
            done = end
        return out + tokenize(prompt[done:], done == 0)
