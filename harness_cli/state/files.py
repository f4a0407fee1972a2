"""The ``$HARNESS_HOME`` files by name (CONTRACT §3), each bound to its model."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from harness_cli import paths
from harness_cli.state import models
from harness_cli.state.store import JsonFile


def task_thread_map() -> JsonFile[models.ThreadMap]:
    return JsonFile(paths.state_file("task-thread-map.json"), models.ThreadMap)


def oncall_thread_map() -> JsonFile[models.ThreadMap]:
    return JsonFile(paths.state_file("oncall_thread_map.json"), models.ThreadMap)


def thread_map(kind: str) -> JsonFile[models.ThreadMap]:
    """The map for a case kind: ``task`` cases in task-thread-map.json, the rest on-call."""
    return task_thread_map() if kind == "task" else oncall_thread_map()


def monitored_mrs() -> JsonFile[models.MonitoredMrs]:
    return JsonFile(paths.state_file("monitored-mrs.json"), models.MonitoredMrs)


def patch_pr_state() -> JsonFile[models.PatchPrState]:
    return JsonFile(paths.state_file("patch-pr-state.json"), models.PatchPrState)


def oncall_state() -> JsonFile[models.OncallState]:
    """The kill switch fails closed: unreadable, it reads as paused (``paused_while_unreadable``)
    until an explicit resume (or pause) writes a good file over it."""
    return JsonFile(
        paths.state_file("oncall-state.json"),
        models.OncallState,
        fail_closed=paused_while_unreadable,
    )


UNREADABLE_KILL_SWITCH = "harness, because oncall-state.json is unreadable"
"""``paused_by`` of the fail-closed stand-in: what ``status`` says paused the harness."""


def paused_while_unreadable(path: Path, reason: str) -> models.OncallState:
    """Reference, Layer 6: the kill switch must hold whatever happens to its file. Truncated,
    binary, of the wrong types or from a newer harness, it means paused — since the file last
    changed — until the operator resumes."""
    try:
        since: datetime | None = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        since = None
    return models.OncallState(
        paused=True, paused_at=since, paused_by=f"{UNREADABLE_KILL_SWITCH} ({reason})"
    )


def slack_cursors() -> JsonFile[models.SlackCursors]:
    return JsonFile(paths.state_file("slack-cursors.json"), models.SlackCursors)


def socket_dedup() -> JsonFile[models.DedupSet]:
    return JsonFile(paths.state_file("socket-dedup"), models.DedupSet, compact=True)
