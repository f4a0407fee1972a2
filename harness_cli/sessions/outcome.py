"""The outcome report (004 "Le bilan atterrit là où le travail a atterri"): written by the
harness at the end of each session from the agent's one ``report_outcome`` answer plus the
facts it saw itself (files changed from git, checks run with their exit codes); stored on the
workspace with the elements touched (committed), read back by the next session on them.

"Les décisions ne sont enregistrées que si l'exécution a réussi… Une exécution échouée garde
son résumé et ses suites à donner."
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harness_cli import clock, paths
from harness_cli.config import load_config
from harness_cli.logs import event
from harness_cli.loop.jsonblocks import json_objects
from harness_cli.sessions.model import Element, Outcome
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import gitsync

log = logging.getLogger("harness.sessions")

BLOCK = "report_outcome"
INSTRUCTION = (
    "This run's work session was opened by the harness and is closed by it: there is no "
    "session tool to call. Just before you finish, give your outcome once, as a JSON block "
    '{"report_outcome": {"summary": "…", "decisions": ["…"], "follow_ups": ["…"], '
    '"relied_on": ["…"]}} — decisions only for choices future work must respect (not debugging '
    "notes)."
)
SHOWN = 3
"""Past outcomes shown to the next session on an element (newest first)."""


def parse_report(text: str) -> dict[str, Any] | None:
    """The agent's last ``report_outcome`` block, or None (absent or unreadable)."""
    for block in reversed(json_objects(text or "")):
        body = block.get(BLOCK)
        if isinstance(body, dict):
            return body
    return None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value if str(v).strip()][:20]
    return []


def build(base: dict[str, Any], report: dict[str, Any] | None, *, succeeded: bool) -> Outcome:
    """The harness's facts (``base``) with the agent's answer; decisions dropped on failure."""
    answer = report or {}
    summary = str(answer.get("summary") or base.pop("summary", "") or "").strip()
    base.pop("summary", None)
    return Outcome(
        **base,
        succeeded=succeeded,
        summary=summary[:2000],
        decisions=_strings(answer.get("decisions")) if succeeded else [],
        follow_ups=_strings(answer.get("follow_ups")),
        relied_on=_strings(answer.get("relied_on")),
        reported=report is not None,
        closed_at=clock.now(),
    )


def folder(element: Element) -> Path:
    slug = hashlib.sha1(element.scope.encode()).hexdigest()[:16]
    return paths.workspace() / "sessions" / "outcomes" / slug


def store(outcome: Outcome, *, commit: bool = True) -> list[Path]:
    """One file per scope touched, then one workspace commit (and push) of them."""
    written: list[Path] = []
    data = outcome.model_dump_json(indent=2) + "\n"
    for scope in sorted({e.scope for e in outcome.elements}):
        path = (
            folder(Element(scope=scope))
            / f"{clock.stamp(outcome.closed_at)}-{outcome.session}.json"
        )
        atomic_write_text(path, data)
        written.append(path)
    if commit and written and (paths.workspace() / ".git").exists():
        try:
            gitsync.sync(
                paths.workspace(),
                f"Outcome of {outcome.name} on {outcome.case_id or 'its elements'}",
                paths=written,
                lock_dir=paths.locks_dir(),
                max_push_attempts=load_config().harness.thresholds.git_push_attempts,
            )
        except Exception as exc:  # noqa: BLE001 - the report is on disk; the next sync pushes it
            event(log, "outcome_not_synced", logging.WARNING, error=str(exc)[:300])
    event(
        log,
        "outcome_report",
        session=outcome.name,
        case_id=outcome.case_id,
        succeeded=outcome.succeeded,
        files=len(outcome.files_changed),
    )
    return written


def previous(elements: list[Element], limit: int = SHOWN) -> list[Outcome]:
    """The newest outcome reports on any scope of ``elements`` (newest first)."""
    found: dict[str, Outcome] = {}
    for scope in sorted({e.scope for e in elements}):
        where = folder(Element(scope=scope))
        for path in sorted(where.glob("*.json"), reverse=True)[:limit] if where.is_dir() else ():
            try:
                report = Outcome.model_validate_json(path.read_bytes())
            except (OSError, ValidationError, ValueError):
                continue
            found.setdefault(report.session, report)
    return sorted(found.values(), key=lambda o: o.closed_at, reverse=True)[:limit]


def briefing(elements: list[Element]) -> list[str]:
    """What the next session is shown: who last worked here, what they left to do."""
    lines = []
    for o in previous(elements):
        state = "succeeded" if o.succeeded else "failed"
        when = f"{o.closed_at:%Y-%m-%d %H:%M}Z"
        line = f"[SESSION] last work here: {o.name} ({state}, {when}): {o.summary or 'no summary'}"
        if o.decisions:
            line += " — decisions: " + "; ".join(o.decisions)
        if o.follow_ups:
            line += " — follow-ups: " + "; ".join(o.follow_ups)
        lines.append(line[:1500])
    return lines
