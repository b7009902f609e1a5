"""Text tasks: replace a term across documents, rewrite prose as bullets, summarize several files."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.tasks.checks import bullets, failed, passed, read_text, squash, write_files
from benchmarks.tasks.task import Task, Verdict

# -- rename a product across the docs ---------------------------------------------------------
DOCS = {
    "docs/intro.md": (
        "# Welcome to Skylark\n\n"
        "Skylark keeps your team's notes in one place. With Skylark you can share a page with a link,\n"
        "and everyone sees the latest version.\n"
    ),
    "docs/install.md": (
        "# Installing\n\n"
        "1. Download the Skylark installer from the downloads page.\n"
        "2. Run it and follow the steps.\n"
        "3. Start Skylark from the applications menu.\n\n"
        "Skylark needs 200 MB of free disk space.\n"
    ),
    "docs/faq.md": (
        "# FAQ\n\n"
        "**Is Skylark free?** Yes, for teams of up to five people.\n\n"
        "**Can I import notes?** Yes: Skylark reads Markdown and plain text files.\n\n"
        "**Where is my data?** In your own account; we never sell it.\n"
    ),
}


def setup_docs(workspace: Path) -> None:
    """Write the three documents, plus a changelog outside docs/ that must stay as it is."""
    write_files(workspace, {**DOCS, "CHANGELOG.md": "## 1.0\n\n- First release of Skylark.\n"})


def check_docs_renamed(workspace: Path, output: str) -> Verdict:
    """Every document says Nimbus where it said Skylark, and nothing else changed."""
    for name, original in DOCS.items():
        text = read_text(workspace, name)
        if text is None:
            return failed(f"{name} is missing")
        if "skylark" in text.lower():
            return failed(f"{name} still mentions Skylark")
        if squash(text) != squash(original.replace("Skylark", "Nimbus")):
            return failed(f"{name} changed beyond the rename")
    if read_text(workspace, "CHANGELOG.md") != "## 1.0\n\n- First release of Skylark.\n":
        return failed("CHANGELOG.md (outside docs/) was changed")
    return passed()


# -- rewrite a paragraph as bullet points -----------------------------------------------------
MEETING = (
    "The team met on Tuesday to plan the spring release. Maria will finish the payment page by March 14. "
    "The mobile app is delayed because the design review moved to next week. We agreed to hire two more "
    "testers before April. The next meeting is on Friday at 10:00.\n"
)
# Each point of the paragraph, as words any faithful bullet keeps (any one of each group).
MEETING_POINTS = (
    ("spring release",),
    ("maria",),
    ("march 14", "14 march", "mar 14", "14 mar", "march 14th", "14th march", "14th of march", "03-14", "3/14"),
    ("design review",),
    ("tester",),
    ("friday",),
)


def setup_meeting(workspace: Path) -> None:
    """Write meeting.txt."""
    write_files(workspace, {"meeting.txt": MEETING})


def check_meeting_bullets(workspace: Path, output: str) -> Verdict:
    """meeting_notes.md is a list of several bullets that keeps every point of the paragraph."""
    text = read_text(workspace, "meeting_notes.md")
    if text is None:
        return failed("meeting_notes.md is missing")
    items = bullets(text)
    if not 4 <= len(items) <= 10:
        return failed(f"expected about one bullet per point (5), found {len(items)}")
    if any(len(item) > 0.6 * len(MEETING) for item in items):
        return failed("a bullet holds most of the paragraph")
    joined = " ".join(items).lower()
    for point in MEETING_POINTS:
        if not any(word in joined for word in point):
            return failed(f"the bullets lost the point about {point[0]!r}")
    return passed()


# -- summarize several status files into one report -------------------------------------------
TEAMS = {
    "Atlas": (
        "72%",
        "the staging database is too small for the load tests",
        ("staging database", "database"),
    ),
    "Beacon": (
        "45%",
        "two developers are waiting for laptops",
        ("laptop",),
    ),
    "Comet": ("90%", None, ()),
}


def _status_file(team: str, progress: str, blocker: str | None) -> str:
    done = "The login flow and the settings page are done." if team != "Beacon" else "The search page is done."
    blocked = f"Blocked: {blocker}." if blocker else "Nothing is blocking us this week."
    return f"Weekly status - team {team}\n\n{done}\nProgress: {progress} of the sprint is complete.\n{blocked}\n"


def setup_status(workspace: Path) -> None:
    """Write one status file per team in status/."""
    files = {
        f"status/{team.lower()}.txt": _status_file(team, progress, blocker)
        for team, (progress, blocker, _) in TEAMS.items()
    }
    write_files(workspace, files)


def check_status_summary(workspace: Path, output: str) -> Verdict:
    """summary.md names each team with its progress and lists every blocker."""
    text = read_text(workspace, "summary.md")
    if text is None:
        return failed("summary.md is missing")
    lower = text.lower()
    sections_end = 0
    for team, (progress, _, blocker_words) in TEAMS.items():
        if team.lower() not in lower:
            return failed(f"team {team} is not in the summary")
        mentions = list(re.finditer(rf"\b{progress.rstrip('%')}\s*(%|percent)", lower))
        if not mentions:
            return failed(f"{team}'s progress ({progress}) is missing")
        sections_end = max(sections_end, mentions[-1].end())
        if blocker_words and not any(word in lower for word in blocker_words):
            return failed(f"{team}'s blocker ({blocker_words[0]}) is missing")
    # The closing list comes after the last progress figure, so it must name every blocker again.
    closing = lower[sections_end:]
    for team, (_, _, blocker_words) in TEAMS.items():
        if blocker_words and not any(word in closing for word in blocker_words):
            return failed(f"the list of blockers at the end lacks {team}'s ({blocker_words[0]})")
    return passed()


TASKS = [
    Task(
        name="rename_product",
        prompt=(
            "Our product was renamed from Skylark to Nimbus. Update all the documents in the docs folder so they "
            "say Nimbus instead of Skylark."
        ),
        setup=setup_docs,
        check=check_docs_renamed,
        kind="text",
        tags=("edit", "multi-file"),
    ),
    Task(
        name="meeting_bullets",
        prompt=(
            "Rewrite the paragraph in meeting.txt as a bulleted list, one bullet per point, "
            "and save it to meeting_notes.md."
        ),
        setup=setup_meeting,
        check=check_meeting_bullets,
        kind="text",
        tags=("rewrite",),
    ),
    Task(
        name="status_summary",
        prompt=(
            "The status folder has this week's update from each team. Write summary.md with a short section per "
            "team (its progress and any blockers), and a list of all blockers at the end."
        ),
        setup=setup_status,
        check=check_status_summary,
        kind="text",
        tags=("summarize", "multi-file", "report"),
    ),
]
