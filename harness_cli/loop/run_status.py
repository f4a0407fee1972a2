"""What a model call's live events become (``RunRequest.on_event``): every retry an agent.log
event, every event a progress line, and the status a run's status message shows.

Reference, Layer 5: the placeholder in the case thread "cycles through statuses (Reading
TASK.md, then Searching codebase, then Drafting patch)" — :func:`status_for` says which event
moves it where. The message itself, posted and edited in Slack, is ``ops/status_message.py``'s
``StatusReporter``: a call site here is handed one as a :class:`RunStatus`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import PurePath
from typing import Protocol

from harness_cli import progress
from harness_cli.logs import event
from harness_cli.services.runtime import RunEvent

log = logging.getLogger("harness.status")

READ_TOOLS = frozenset({"Read", "NotebookRead"})
SEARCH_TOOLS = frozenset({"Grep", "Glob", "LS", "WebFetch", "WebSearch", "Task"})
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})


def status_for(ev: RunEvent) -> str | None:
    """The status an event moves the message to; None leaves it where it is."""
    if ev.kind == "init":
        return "Starting"
    if ev.kind == "retry":
        return "Waiting for the model API"
    if ev.kind != "tool_use":
        return None
    name = str(ev.data.get("name", ""))
    args = ev.data.get("input") or {}
    path = PurePath(str(args.get("file_path") or args.get("path") or "")) if args else None
    if name in READ_TOOLS and path is not None and path.name == "TASK.md":
        return "Reading TASK.md"
    if name in READ_TOOLS or name in SEARCH_TOOLS or name.startswith("mcp__"):
        return "Searching codebase"
    if name in EDIT_TOOLS:
        if path is not None and path.suffix == ".md":
            return f"Writing {path.name}"
        return "Drafting patch"
    if name == "Bash":
        return "Running commands"
    return None


class RunStatus(Protocol):
    """What a model call site needs from a status reporter."""

    def start(self, phase: str = "") -> None: ...

    def event(self, ev: RunEvent) -> None: ...

    def done(self, summary: str = "", *, limit: int = 200) -> None: ...

    def failed(self, reason: str, *, limit: int = 300) -> None: ...


def observe(status: RunStatus | None, *, case_id: str, role: str) -> Callable[[RunEvent], None]:
    """The ``on_event`` of a run: every retry becomes an agent.log event ("every spawn, chain
    dispatch and retry attempt becomes a structured event"), and the status message follows."""

    def on_event(ev: RunEvent) -> None:
        if ev.kind == "retry":
            fields = {
                k: v
                for k, v in ev.data.items()
                if isinstance(v, str | int | float) and k not in ("case_id", "role")
            }
            event(log, "model_retry", logging.WARNING, case_id=case_id, role=role, **fields)
        if status is not None:
            status.event(ev)

        used = sum(v for v in ev.data.values() if isinstance(v, int)) if ev.kind == "usage" else 0
        progress.publish("run", case_id=case_id, role=role, step=status_for(ev), tokens=used)

    return on_event
