"""Prompt-lookup drafting: guess the next tokens from where the text so far was seen before.

An agent's output repeats its input: code that names the CSV's columns, an ``edit_file`` whose
``old`` text is copied from a file just read, a corrected version of the block that failed.
When the last few tokens occurred earlier (in the prompt or in this output), the tokens that
followed them then are a cheap guess at what follows now. The decoder evaluates the guess in
one batch with the real next token and keeps the part the model's own samples confirm, so the
output is what token-by-token sampling would give (up to the rounding differences between a
batch and single steps, which can change a sampled token). A guess pays when a batch costs
much less than its tokens one by one: on a GPU or many cores, not on 2 CPU cores, where it is
off by default (:attr:`pymanus.models.local_runtime.Sampling.draft_tokens`). Drafts grow while
they hold and shrink while they fail.
"""

from __future__ import annotations

from collections.abc import Sequence

NGRAM = 3
"""Tokens of context that must match to draft (2 drafts often and wrongly, 4 rarely)."""
FIRST_DRAFT = 8
MIN_DRAFT = 2


class Drafter:
    """Tracks the tokens so far and proposes drafts from their earlier occurrences."""

    def __init__(self, prompt: Sequence[int], longest: int) -> None:
        self.tokens = list(prompt)
        self.longest = longest
        self.length = min(FIRST_DRAFT, longest)
        self._ends: dict[tuple[int, ...], int] = {}
        for end in range(NGRAM, len(self.tokens) + 1):
            self._ends[tuple(self.tokens[end - NGRAM : end])] = end
        self._match: int | None = None

    def add(self, token: int) -> None:
        """Record one more token of the sequence."""
        self.tokens.append(token)
        if len(self.tokens) >= NGRAM:
            key = tuple(self.tokens[-NGRAM:])
            self._match = self._ends.get(key)
            self._ends[key] = len(self.tokens)

    def draft(self, room: int) -> list[int]:
        """The tokens that followed the last occurrence of the current ending (at most ``room``)."""
        if self._match is None:
            return []
        return self.tokens[self._match : self._match + min(self.length, room)]

    def verified(self, drafted: int, accepted: int) -> None:
        """Adapt the draft length to how much of the last draft held (a step without one says nothing)."""
        if not drafted:
            return
        if accepted == drafted:
            self.length = min(self.longest, self.length * 2)
        elif accepted == 0:
            self.length = min(self.longest, max(MIN_DRAFT, self.length // 2))
