"""Surfacing a case's context for a PagerDuty page: the one message posted into the case's
thread in the operator's self-DM — the page (title, link, state) and what the harness already
knows (the case's status, its investigation's exit line, the first lines of ANALYSIS.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness_cli.outbox.outbound import Outbound
from harness_cli.state import files
from harness_cli.state.models import ThreadEntry
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

if TYPE_CHECKING:
    from harness_cli.intake.pagerduty.incident import Incident

ANALYSIS_LINES = 8
"""How many non-blank lines of ANALYSIS.md the message quotes."""
ANALYSIS_CHARS = 1500
LINE_CHARS = 300


def find_case_thread(case: Case, self_dm: str) -> ThreadEntry | None:
    """The case's thread in the self-DM: its ``case_thread`` first, else any thread of the case
    there. Threads Slack reported gone (``evicted``) are never used."""
    entries = [
        t
        for t in files.thread_map(case.kind).read().for_case(case.id)
        if t.channel == self_dm and not t.evicted
    ]
    preferred = [t for t in entries if t.role == "case_thread"]
    candidates = preferred or entries
    return candidates[0] if candidates else None


def surface(
    incident: Incident,
    case: Case,
    outbound: Outbound,
    thread: ThreadEntry | None,
    *,
    self_dm: str,
) -> str:
    """Post ONE message with the case's context and return its ts. Without a case thread the
    message starts one in the self-DM and is registered as the case's ``case_thread``."""
    text = render(incident, case)
    if thread is not None:
        return outbound.post(thread.channel, text, thread_ts=thread.thread_ts)
    ts = outbound.post(self_dm, text)
    registry.register_thread(case, channel=self_dm, thread_ts=ts, role="case_thread")
    return ts


def render(incident: Incident, case: Case) -> str:
    title = _escape(incident.title or incident.id)
    link = f"<{incident.html_url}|{title}>" if incident.html_url else title
    number = f"#{incident.number} " if incident.number is not None else ""
    facts = [
        f
        for f in (
            incident.status,
            f"{incident.urgency} urgency" if incident.urgency else "",
            _escape(incident.service),
        )
        if f
    ]
    lines = [
        f":rotating_light: PagerDuty incident {number}names case *{case.id}*",
        f"{link}" + (f" · {' · '.join(facts)}" if facts else ""),
        f"*Case {case.id}* — {_escape(case.title)} ({case.project}) · status: *{case.status}*"
        + (f" · Jira {case.jira}" if case.jira and case.jira != case.id else ""),
        f"Exit: `{_escape(case.exit)}`" if case.exit else "Exit: no finished investigation yet",
    ]
    preview = analysis_preview(case.id)
    if preview:
        lines.append("*ANALYSIS.md* (first lines):")
        lines.extend(f"> {_escape(line)}" for line in preview)
    else:
        lines.append("No ANALYSIS.md yet.")
    return "\n".join(lines)


def analysis_preview(case_id: str) -> list[str]:
    """The first non-blank lines of the case's ANALYSIS.md, bounded in lines and characters."""
    path = registry.case_dir(case_id) / "ANALYSIS.md"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return []
    out: list[str] = []
    used = 0
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        line = line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
        if len(out) >= ANALYSIS_LINES or used + len(line) > ANALYSIS_CHARS:
            out.append("…")
            break
        out.append(line)
        used += len(line)
    return out


def _escape(text: str) -> str:
    """Slack's three control characters; a page title must not become a link or a mention."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
