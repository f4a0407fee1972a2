"""harness session open|close|status|list|gate — work sessions (reference 004) from the shell
and from the claude CLI hooks (cron/hooks/session-open.sh, pre-tool-use.sh, session-end.sh).

``--hook`` reads the hook event (JSON on stdin: session_id, cwd, tool_input) instead of
options. ``gate --hook`` is the PreToolUse hook: a write inside another session's exclusive
reservation exits 2 with the reason on stderr, which the claude CLI shows the model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from harness_cli import clock, paths
from harness_cli.commands import new_app
from harness_cli.errors import InputError, PolicyRefused
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.sessions import human, lifecycle, waiting
from harness_cli.sessions.model import Element, SessionRecord
from harness_cli.sessions.reservations import look
from harness_cli.state.locks import hold

app = new_app(
    "Work sessions and reservations: open, close, status, list (hooks call it).",
    no_args_is_help=True,
)


def _hook_event() -> dict[str, Any]:
    if sys.stdin.isatty():
        raise InputError("no hook event on stdin", hint="claude pipes it to the hook")
    try:
        data = json.loads(sys.stdin.read() or "{}")
    except ValueError as exc:
        raise InputError(f"the hook input is not JSON ({exc})") from None
    return data if isinstance(data, dict) else {}


@app.command("open")
def open_(
    case: str | None = typer.Option(None, "--case", metavar="CASE", help="Reserve this case."),
    repo: str | None = typer.Option(
        None, "--repo", metavar="GROUP/PROJECT", help="Reserve (part of) this repository."
    ),
    path: list[str] = typer.Option(
        [], "--path", metavar="PATH", help="A path or glob inside --repo (repeat); none: all of it."
    ),
    task: str = typer.Option("", "--task", metavar="TEXT", help="What you are doing."),
    workflow: str = typer.Option(
        "claude-code",
        "--workflow",
        metavar="NAME",
        help="claude-code (a human's session) or a workflow name.",
    ),
    external_id: str = typer.Option("", "--id", metavar="ID", help="Your own id for it."),
    hook: bool = typer.Option(False, "--hook", help="SessionStart hook: read the event on stdin."),
) -> None:
    """Open a session: the preflight gate decides; denied exits 4 naming the holder."""

    cwd: Path | None = None
    if hook:
        event = _hook_event()
        cwd = Path(str(event.get("cwd") or ".")).absolute()
        external_id = str(event.get("session_id") or external_id)
        found, _ = human.repo_of(cwd)
        repo = repo or found or None
        task = task or f"claude session in {cwd.name}"
    elements = [Element.case(case)] if case else []
    if repo:
        elements += [Element.repo(repo, p) for p in path or [""]]
    if not elements:
        if hook:  # not a checkout of a known repo: nothing to coordinate
            return
        raise InputError(
            "session open needs --case and/or --repo",
            hint="e.g. --repo acme/billing --path src/invoice/",
        )
    opened = human.open_human(
        elements=elements, task=task, external_id=external_id, cwd=cwd, workflow=workflow
    )
    if hook:  # SessionStart must never block: conflicts go into the model's context
        lines = opened.conflicts if opened.record is None or opened.conflicts else []
        if opened.verdict.decision == "deny":
            lines = [opened.verdict.line, *lines]
        if lines or opened.briefing:
            context = "\n".join(
                (["**Conflicts** (someone else is already working here):"] if lines else [])
                + [f"  - {line}" for line in lines]
                + opened.briefing
            )
            out = {
                "hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": context,
                }
            }
            sys.stdout.write(json.dumps(out) + "\n")
        return
    if opened.record is None:
        raise PolicyRefused(
            opened.verdict.line,
            hint="nothing is held; `harness session list` shows who works where",
        )
    record = opened.record
    result = Result("session open", data=record.model_dump(mode="json"))
    result.changed.append(
        f"session {record.id} open as {record.name} on "
        f"{', '.join(e.label for e in record.elements)}"
    )
    result.messages += [f"also here: {line}" for line in opened.conflicts]
    result.messages += opened.briefing
    emit(result)


@app.command()
def close(
    session: str | None = typer.Argument(None, help="The session id (or --id / --hook)."),
    external_id: str = typer.Option("", "--id", metavar="ID", help="The id given at open."),
    summary: str = typer.Option("", "--summary", metavar="TEXT", help="The outcome, in brief."),
    failed: bool = typer.Option(False, "--failed", help="The work did not succeed."),
    hook: bool = typer.Option(False, "--hook", help="SessionEnd hook: read the event on stdin."),
) -> None:
    """Close a session: release its reservations and write its outcome report."""

    if hook:
        external_id = str(_hook_event().get("session_id") or external_id)
    record = human.find(external_id) if external_id else None
    if record is None and session:
        path = lifecycle.record_path(session)
        if path.exists():
            record = SessionRecord.model_validate_json(path.read_bytes())
    if record is None:
        if hook:
            return
        raise InputError(
            f"no open session {session or external_id!r} on this machine",
            hint="`harness session status` lists them",
        )
    said = human.close_human(record, summary=summary, succeeded=not failed)
    result = Result("session close", data=record.model_dump(mode="json"))
    result.changed.append(said)
    emit(result)


@app.command()
def gate(
    file: str | None = typer.Option(None, "--file", metavar="PATH", help="The file to write."),
    external_id: str = typer.Option("", "--id", metavar="ID", help="Your session's id."),
    hook: bool = typer.Option(False, "--hook", help="PreToolUse hook: read the event on stdin."),
) -> None:
    """May this file be written now? Exit 2 (reason on stderr) when it lies in another
    session's exclusive reservation — the PreToolUse contract of the claude CLI."""

    cwd = Path.cwd()
    if hook:
        event = _hook_event()
        cwd = Path(str(event.get("cwd") or cwd))
        external_id = str(event.get("session_id") or external_id)
        tool_input = event.get("tool_input") or {}
        file = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "") or None
    if not file:
        if hook:
            return
        raise InputError("session gate needs --file PATH")
    target = Path(file) if Path(file).is_absolute() else cwd / file
    record = human.find(external_id) if external_id else None
    refused = human.gate_write(record, target, cwd)
    if refused:
        sys.stderr.write(refused + "\n")
        raise typer.Exit(2)
    if not hook:
        emit(
            Result(
                "session gate",
                data={"allowed": True, "file": str(target)},
                messages=[f"{target}: allowed"],
            )
        )


@app.command()
def status() -> None:
    """This machine's sessions (open, recently closed) and the runs waiting for approval."""
    from pydantic import ValidationError

    waiting.expire_due()
    records = []
    folder = paths.home() / "sessions"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            records.append(SessionRecord.model_validate_json(p.read_bytes()))
        except (OSError, ValidationError, ValueError):
            continue
    runs = waiting.all_runs()
    result = Result(
        "session status",
        data={
            "sessions": [r.model_dump(mode="json", exclude={"hold"}) for r in records],
            "waiting": [w.model_dump(mode="json", exclude={"payload"}) for w in runs],
        },
    )
    result.columns = ["id", "name", "state", "elements"]
    result.rows = [
        [r.id, r.name, r.state, ", ".join(e.label for e in r.elements)]
        for r in records
        if r.state == "open"
    ]
    result.rows += [
        [w.run, f"{w.workflow} {w.case_id}", w.state, "; ".join(w.reasons)[:80]]
        for w in runs
        if w.state == "waiting_for_approval"
    ]
    if not result.rows:
        result.messages.append("no open session and no run waiting on this machine")
    emit(result)


@app.command("list")
def list_() -> None:
    """Every live session on the workspace remote, whichever machine or human opened it."""

    waiting.expire_due()
    with hold("sessions-board", timeout=60, what="the reservation board"):
        snap = look(lifecycle.open_board(), clock.now(), lifecycle.machine_id())
    live = [h.model_dump(mode="json") for h in snap.live]
    result = Result("session list", data={"live": live, "stale": [h.session for h in snap.stale]})
    result.columns = ["name", "elements", "exclusive", "task", "expires"]
    result.rows = [
        [
            h.name,
            ", ".join(e.label for e in h.elements),
            "yes" if h.exclusive else "no",
            h.task[:40],
            clock.relative(h.expires_at),
        ]
        for h in snap.live
    ]
    if not snap.live:
        result.messages.append("no live session on the workspace remote")
    emit(result)
