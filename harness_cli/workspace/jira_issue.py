"""The Jira issue a case is keyed by, as the harness read it (#30): ``control/<id>/jira-issue.md``
(no agent writes there; a mirror in the case folder for humans). Written by the intake's Jira
source, read by every prompt that reads the ticket."""

from __future__ import annotations

from pathlib import Path

from harness_cli.workspace import control

FILE = "jira-issue.md"


def write(case_dir: Path, text: str) -> None:
    control.write_text(case_dir, FILE, text)


def attached(case_dir: Path) -> str:
    try:
        return control.read_bytes(case_dir, FILE).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def ticket_context(case_dir: Path) -> str:
    """What the prompts add after the ticket: the Jira issue, when one is attached."""
    text = attached(case_dir)
    if not text:
        return ""
    return f"\n\n--- The Jira issue this case is keyed by (read by the harness) ---\n{text}"
