"""The case registry: case folders in the git-synced workspace and the thread → case maps.

Every change to a case is written atomically under the per-case lock, then committed and pushed
(``gitsync``), so a second machine that pulls the workspace picks up the same case.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_cli import clock, paths
from harness_cli.config import Thresholds
from harness_cli.errors import InputError, StateConflict, StateError
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.state import files
from harness_cli.state.locks import case_lock
from harness_cli.state.models import ThreadEntry, ThreadMap
from harness_cli.state.store import (
    atomic_write_json,
    check_schema_version,
    unreadable_reason,
)
from harness_cli.workspace import control, gitsync
from harness_cli.workspace.case import Case, Source, validate_case_id
from harness_cli.workspace.gitsync import workspace_lock

log = logging.getLogger("harness.workspace")
system_log = logging.getLogger("harness.system.sync")

CASE_FILE = control.CASE_FILE
adopt_legacy = control.adopt_legacy


@dataclass
class Opened:
    case: Case
    created: bool
    dir: Path


def case_dir(case_id: str) -> Path:
    return paths.cases_root() / validate_case_id(case_id)


def case_file(case_id: str) -> Path:
    """The case's record: ``control/<id>/case.json``, out of every agent's reach (#28 R4). The
    ``case.json`` in the case folder is its mirror for humans; nothing here reads it."""
    return paths.control_root() / validate_case_id(case_id) / CASE_FILE


def load_case(case_id: str) -> Case:
    path = case_file(case_id)
    adopt_legacy()  # a no-op once control/ exists (callers under the tree lock ran it before)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(
            f"no case {case_id!r} in {paths.cases_root()}",
            hint="see `harness case list`, or check HARNESS_WORKSPACE",
        ) from None
    check_schema_version(path, raw, Case)
    try:
        return Case.model_validate_json(raw)
    except ValueError as exc:
        raise StateError(
            f"{path} is unreadable ({unreadable_reason(raw, exc)})", hint=restore_hint(path)
        ) from None


def restore_hint(path: Path) -> str:
    """How to get a case file back from Slack (#34 items 2, 3): ``admin: repair`` restores its
    last committed version that reads (:mod:`harness_cli.workspace.repair`)."""
    case_id = path.parent.name
    try:
        path.relative_to(paths.control_root())
        validate_case_id(case_id)
    except (ValueError, InputError):
        return "restore it from the workspace's git history"
    return (
        f"send `admin: repair {case_id}` in your self-DM: it restores its last committed "
        "version that reads"
    )


def _write(folder: Path, case: Case) -> None:
    """The record in ``control/``, then its mirror in the case folder."""
    control.write_text(folder, CASE_FILE, case.model_dump_json(indent=2, by_alias=True))


def _control_of(path: Path) -> Path | None:
    """The control folder of the case ``path`` is in (the case folder or a file of it)."""
    try:
        rel = Path(path).absolute().relative_to(paths.cases_root().absolute())
    except ValueError:
        return None
    return paths.control_root() / rel.parts[0] if rel.parts else None


def _tree_lock() -> Any:
    """Writes to case files take the workspace's git lock too: a sync rebasing or merging
    rewrites the working tree, and a write landing in the middle would be lost or conflicted."""

    return workspace_lock(paths.locks_dir())


def sync(message: str, thresholds: Thresholds, *, only: list[Path] | None = None) -> str | None:
    """Commit and push the workspace: "committed and pushed at every meaningful change".
    Returns this sync's commit (None when nothing had changed). A case folder in ``only``
    brings its control folder along: the two are one case."""

    if only is not None:
        only = list(dict.fromkeys([*only, *filter(None, map(_control_of, only))]))
    root = paths.workspace()
    if not (root / ".git").exists():
        gitsync.ensure_repo(root, lock_dir=paths.locks_dir())
    result = gitsync.sync(
        root,
        message,
        paths=only,
        lock_dir=paths.locks_dir(),
        max_push_attempts=thresholds.git_push_attempts,
        stale_lock_seconds=thresholds.stale_index_lock_seconds,
    )
    if result.conflicts:
        event(log, "workspace_conflict_kept_local", logging.WARNING, paths=result.conflicts)
    event(
        system_log,
        "workspace_synced",
        logging.INFO,
        message=message,
        committed=result.committed,
        pushed=result.pushed,
        attempts=result.attempts,
    )
    if result.refused:
        # The merged state is committed (and pushed): the run that made the refused move
        # stops here instead of acting on a state the case no longer has.
        event(log, "case_transition_refused", logging.WARNING, refused=result.refused)
        raise StateConflict(
            "; ".join(result.refused),
            hint="the other machine's state stands; `harness case show` for the case's history",
        )
    return result.committed


def refresh(thresholds: Thresholds) -> bool:
    """Bring in what other machines pushed to the workspace remote, before a run acts on a
    case: a stale clone must not investigate a case another machine closed (the merge rules
    would refuse its move at the next sync — after its model calls and its posts). Returns
    whether anything came in. A local move the merge refuses ends the run (StateConflict)."""

    root = paths.workspace()
    if not (root / ".git").exists():
        return False
    result = gitsync.pull(
        root, paths.locks_dir(), stale_lock_seconds=thresholds.stale_index_lock_seconds
    )
    event(system_log, "workspace_pulled", logging.INFO, before=result.before, after=result.after,
          skipped=result.skipped)  # fmt: skip
    if result.refused:
        event(log, "case_transition_refused", logging.WARNING, refused=result.refused)
        raise StateConflict(
            "; ".join(result.refused),
            hint="the other machine's state stands; `harness case show` for the case's history",
        )
    return result.updated


def open_case(
    thresholds: Thresholds,
    *,
    case_id: str,
    project: str,
    title: str,
    kind: str = "oncall",
    jira: str | None = None,
    message: dict[str, Any] | None = None,
    source: Source | None = None,
    sync_now: bool = True,
    linked_to: str = "",
) -> Opened:
    """Create the case folder, ``message.json`` and ``case.json``; re-running is a no-op.
    ``sync_now=False`` leaves the commit to the caller (a poll cycle commits its new cases
    once, at its end; the next sync commits anything a killed run left behind)."""
    folder = case_dir(case_id)
    adopt_legacy()
    with case_lock(case_id):
        if case_file(case_id).exists():
            case = load_case(case_id)
            if not (folder / CASE_FILE).exists():  # killed between the record and its mirror
                control.mirror(folder, CASE_FILE, case_file(case_id).read_text("utf-8"))
            return Opened(case, False, folder)
        now = clock.now()
        case = Case(
            id=case_id,
            project=project,
            kind=kind,
            title=title,
            jira=jira,
            source=source or Source(),
            linked_to=linked_to,
            created_at=now,
            updated_at=now,
        )
        with _tree_lock():
            folder.mkdir(parents=True, exist_ok=True)
            crash_point("case.dir")
            msg_path = folder / "message.json"
            atomic_write_json(msg_path, message or {"text": title})
            # The originating message is evidence: agents may read it, never rewrite it.
            os.chmod(msg_path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            crash_point("case.message")
            _write(folder, case)
            crash_point("case.json")
        event(log, "case_created", case_id=case_id, project=project, kind=kind)
        if case.source.channel and case.source.thread_ts and paths.cases_root() in _SOURCES:
            _SOURCES[paths.cases_root()][(case.source.channel, case.source.thread_ts)] = case_id
    if sync_now:
        sync(f"case {case_id}: opened ({project})", thresholds, only=[folder])
    return Opened(case, True, folder)


@contextmanager
def update_case(
    case_id: str, thresholds: Thresholds, message: str, *, sync_now: bool = True
) -> Iterator[Case]:
    """``with update_case(id, t, "why") as case: case.move("investigating")`` — written and
    synced only if the block succeeds. ``sync_now=False`` writes case.json and commits nothing
    now (a dry run, or a caller that commits later).

    Whichever path closes a case (merge, close, close-case, finalize) comes through here, so
    this is where a closed case's threads stop being polled — and a reopened one's start again.
    """
    folder = case_dir(case_id)
    adopt_legacy()
    with case_lock(case_id):
        with _tree_lock():
            case = load_case(case_id)
        before = case.model_dump_json(by_alias=True)
        was = case.status
        yield case
        changed = case.model_dump_json(by_alias=True) != before
        if changed:
            case.updated_at = clock.now()
            with _tree_lock():
                _write(folder, case)
    if (was == "closed") != (case.status == "closed"):
        set_threads_closed(case, closed=case.status == "closed")
    if changed and sync_now:
        sync(f"case {case_id}: {message}", thresholds, only=[folder])


def is_closed(case_id: str) -> bool:
    """The case exists and is closed (an unreadable case.json is not "closed": it raises)."""
    if not case_file(case_id).exists():
        return False
    return load_case(case_id).status == "closed"


def link_cases(old: str, new: str, thresholds: Thresholds, *, sync_now: bool = True) -> None:
    """Record on the closed case ``old`` that ``new`` was opened by a ticket naming it
    (idempotent: a redelivered ticket links once)."""
    with update_case(old, thresholds, f"linked to {new}", sync_now=sync_now) as case:
        if new not in case.linked_cases:
            case.linked_cases.append(new)


SUMMARY_KEYS = (
    "id", "project", "kind", "status", "title", "jira", "created_at", "updated_at", "exit",
)  # fmt: skip

BROKEN = "broken"
"""The status ``list_cases(include_broken=True)`` gives a case whose case.json is unreadable."""


def list_cases(
    *, status: str | None = None, project: str | None = None, include_broken: bool = False
) -> list[dict[str, Any]]:
    """Summaries of every case, newest first. Reads raw JSON (no model validation) because
    ``case list`` must stay fast with thousands of cases. A folder whose case.json cannot be
    read is never skipped silently: it is logged (what and how to fix), and with
    ``include_broken`` listed with status ``broken`` and a ``problem``."""
    adopt_legacy()
    root = paths.control_root()
    out: list[dict[str, Any]] = []
    try:
        entries = os.scandir(root)
    except FileNotFoundError:
        return out
    with entries:
        for entry in entries:
            path = Path(entry.path) / CASE_FILE
            try:
                raw = path.read_bytes()
            except (FileNotFoundError, NotADirectoryError):
                continue
            data = _summary_data(raw)
            if data is None:
                problem = _broken(path, raw, tell=not include_broken)
                if include_broken and status in (None, BROKEN) and project is None:
                    summary = dict.fromkeys(SUMMARY_KEYS)
                    summary.update(id=entry.name, status=BROKEN, problem=problem)
                    out.append(summary)
                continue
            if status and data.get("status") != status:
                continue
            if project and data.get("project") != project:
                continue
            out.append({k: data.get(k) for k in SUMMARY_KEYS})
    out.sort(key=lambda c: c.get("created_at") or "", reverse=True)
    return out


def _summary_data(raw: bytes) -> dict[str, Any] | None:
    """The raw case.json as a dict, or None when it is not a case a listing can show."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return None
    return data


def _broken(path: Path, raw: bytes, *, tell: bool) -> str:
    try:
        Case.model_validate_json(raw)
        reason = "not a case record"
    except ValueError as exc:
        reason = unreadable_reason(raw, exc)
    problem = f"{path} is unreadable ({reason}) — {restore_hint(path)}"
    if tell:  # a listing that shows it says it itself
        event(log, "case_unreadable", logging.WARNING, path=str(path), problem=problem)
    return problem


def register_thread(case: Case, *, channel: str, thread_ts: str, role: str = "manual") -> bool:
    """Link a Slack thread to a case in the map of its kind; False if it already was."""
    key = ThreadMap.key(channel, thread_ts)
    with files.thread_map(case.kind).update() as tmap:
        existing = tmap.threads.get(key)
        if existing and existing.case_id == case.id and not existing.closed:
            return False
        tmap.threads[key] = ThreadEntry(
            channel=channel,
            thread_ts=thread_ts,
            case_id=case.id,
            case_dir=str(case_dir(case.id).resolve()),
            project=case.project,
            jira=case.jira,
            role=role,
        )
    return True


def close_threads(case: Case) -> int:
    """Mark every thread of the case closed: closed cases are not polled."""
    return set_threads_closed(case, closed=True)


def set_threads_closed(case: Case, *, closed: bool) -> int:
    """Close (or, for a reopened case, reopen) every thread of the case, in both maps (a case
    thread of a task case may sit in either). Returns how many changed."""
    count = 0
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        if not handle.read().for_case(case.id):
            continue
        with handle.update() as tmap:
            for entry in tmap.for_case(case.id):
                if entry.closed != closed:
                    entry.closed = closed
                    count += 1
    if count:
        event(log, "case_threads_closed" if closed else "case_threads_reopened",
              case_id=case.id, threads=count)  # fmt: skip
    return count


def reopen_threads(case: Case) -> int:
    """Undo :func:`close_threads` (``case reopen``): the case's threads are polled again."""
    return set_threads_closed(case, closed=False)


def case_thread(case_id: str) -> ThreadEntry | None:
    """The case's own thread in the operator's self-DM (either map), unless evicted."""
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        for entry in handle.read().for_case(case_id):
            if entry.role == "case_thread" and not entry.evicted:
                return entry
    return None


_SOURCES: dict[Path, dict[tuple[str, str], str]] = {}


def case_by_source(channel: str, ts: str) -> str | None:
    """The case whose originating message is ``channel``/``ts`` (each ``case.json``'s
    ``source``), whatever its id: how a ticket already held as a case is recognised. The index
    is read once per process and kept up to date by :func:`open_case`."""
    root = paths.cases_root()
    if root not in _SOURCES:
        index: dict[tuple[str, str], str] = {}
        for entry in _raw_cases():
            source = entry.get("source") or {}
            if source.get("channel") and source.get("thread_ts") and entry.get("id"):
                index[(str(source["channel"]), str(source["thread_ts"]))] = str(entry["id"])
        _SOURCES[root] = index
    return _SOURCES[root].get((channel, ts))


def _raw_cases() -> Iterator[dict[str, Any]]:
    adopt_legacy()
    root = paths.control_root()
    try:
        entries = os.scandir(root)
    except FileNotFoundError:
        return
    with entries:
        for entry in entries:
            try:
                with open(os.path.join(entry.path, CASE_FILE), "rb") as handle:
                    data = json.loads(handle.read())
            except (FileNotFoundError, NotADirectoryError, ValueError):
                continue
            if isinstance(data, dict):
                yield data


def open_cases_raw() -> list[dict[str, Any]]:
    """``case.json`` of every case not closed, as raw JSON (bootstrap rebuilds its maps)."""
    return [c for c in _raw_cases() if c.get("status") != "closed"]
