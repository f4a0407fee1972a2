"""Violations become ``pending_guard_notes``, placed at the head of the next iteration's prompt
with an explicit instruction to address every note first. The gates do not block the model;
they make its earlier violations the first thing it reads next round."""

from __future__ import annotations

from collections.abc import Sequence

from harness_cli.loop.verdict import Verdict

GUARD_HEADING = "## SYSTEM QUALITY GUARD NOTES (from previous iteration)"
GUARD_INSTRUCTION = (
    "Address every note below first, before any other work in this iteration; say in your "
    "output how each one was resolved."
)


def pending_guard_notes(verdict: Verdict) -> list[str]:
    """The verdict's violations, then the notes its decision added (force rules)."""
    notes = [v.note() for v in verdict.violations]
    if verdict.decision is not None:
        notes += list(verdict.decision.notes)
    return notes


def render_guard_notes(notes: Sequence[str]) -> str:
    """The block for the head of the next prompt ("" when there is nothing to say)."""
    if not notes:
        return ""
    items = [f"{i}. {note}" for i, note in enumerate(notes, 1)]
    return "\n".join([GUARD_HEADING, "", GUARD_INSTRUCTION, "", *items, ""])
