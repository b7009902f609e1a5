"""Prompt-lookup drafting: what is drafted, and how the draft length adapts."""

from __future__ import annotations

from pymanus.models.lookup import FIRST_DRAFT, MIN_DRAFT, Drafter


def _fed(prompt: list[int], *tokens: int, longest: int = 16) -> Drafter:
    drafter = Drafter(prompt, longest)
    for token in tokens:
        drafter.add(token)
    return drafter


def test_drafts_what_followed_the_last_three_tokens_before() -> None:
    drafter = _fed([1, 2, 3, 4, 5, 6, 7, 9, 9], 1, 2, 3)
    assert drafter.draft(room=100) == [4, 5, 6, 7, 9, 9, 1, 2]  # FIRST_DRAFT tokens
    assert len(drafter.draft(room=100)) == FIRST_DRAFT


def test_the_latest_occurrence_wins_and_output_tokens_count() -> None:
    drafter = _fed([1, 2, 3, 4, 0, 1, 2, 3, 5], 7, 1, 2, 3)
    assert drafter.draft(room=2) == [5, 7]
    drafter.add(8)  # "2 3 8" was never seen
    assert drafter.draft(room=10) == []


def test_no_draft_without_a_match_or_room() -> None:
    assert _fed([1, 2, 3, 4], 9, 9).draft(room=10) == []
    assert _fed([1, 2, 3, 4], 1, 2, 3).draft(room=0) == []
    assert _fed([], 1).draft(room=10) == []


def test_draft_length_grows_while_drafts_hold_and_shrinks_while_they_fail() -> None:
    drafter = Drafter([], longest=16)
    drafter.verified(drafted=8, accepted=8)
    assert drafter.length == 16
    drafter.verified(drafted=16, accepted=16)
    assert drafter.length == 16  # never past the longest
    drafter.verified(drafted=16, accepted=5)
    assert drafter.length == 16  # partly held: unchanged
    drafter.verified(drafted=0, accepted=0)
    assert drafter.length == 16  # no draft, nothing learnt
    for _ in range(5):
        drafter.verified(drafted=4, accepted=0)
    assert drafter.length == MIN_DRAFT
    assert Drafter([], longest=1).length == 1
    short = Drafter([], longest=1)
    short.verified(drafted=1, accepted=0)
    assert short.length == 1
