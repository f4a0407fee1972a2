"""The session store's other entry points: the SessionStart lookup, the background fetcher
and the status listing.

"When Claude starts somewhere, the session-start.sh hook looks through the local .meta files
for the entry recorded against that CWD and picks up its UUID. One UUID therefore follows the
operator across machines." The fetcher keeps those files current every 5 seconds, so a start
does not wait on the network.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_cli.errors import LockHeld, ServiceError
from harness_cli.memory.resume.model import (
    ACTIVE,
    LINECOUNT,
    META,
    SESSIONS_DIR,
    HookInput,
    SessionEnv,
    SessionMeta,
    SessionSyncSettings,
    read_linecount,
    read_lines,
    read_meta,
    same_dir,
)
from harness_cli.memory.resume.sync import (
    STALE_INDEX_LOCK,
    fetch_reset,
    load_state,
    open_store,
    state_file,
    write_transcript,
)
from harness_cli.workspace.gitsync import FRESH_INDEX_LOCK_WAIT, _prepare, workspace_lock

log = logging.getLogger(__name__)


@dataclass
class StartInfo:
    """What the SessionStart lookup found for a working directory."""

    cwd: str
    session_id: str | None = None
    """The UUID recorded for ``cwd`` (newest when several are); None when there is none."""
    meta: SessionMeta | None = None
    current: bool = False
    """True when claude already runs that session."""
    restored: Path | None = None
    """Where the stored transcript was put so ``claude --resume`` finds it on this machine."""
    fetched: bool = False
    fetch_error: str | None = None
    context: str = ""


@dataclass
class FetchResult:
    updated: bool = False
    head: str | None = None
    skipped: str | None = None


def list_sessions(env: SessionEnv) -> list[SessionMeta]:
    """Every readable ``session.meta`` in the local clone, newest first."""
    root = env.repo / SESSIONS_DIR
    found = [read_meta(path) for path in sorted(root.glob(f"*/{META}"))] if root.is_dir() else []
    return sorted((m for m in found if m), key=lambda m: m.updated_at, reverse=True)


def fetch_once(env: SessionEnv, settings: SessionSyncSettings, *, wait: float) -> FetchResult:
    """One fetch-and-reset of the local clone, under the flock (skipped if a sync holds it
    longer than ``wait`` seconds: the sync fetches anyway)."""
    git = open_store(env, settings)
    if git is None:
        return FetchResult(skipped="no session store remote: set HARNESS_SESSIONS_REMOTE")
    try:
        with workspace_lock(env.lock_dir, wait):
            _prepare(git, STALE_INDEX_LOCK, FRESH_INDEX_LOCK_WAIT)
            before = git.head_sha()
            fetch_reset(git)
            after = git.head_sha()
    except LockHeld:
        return FetchResult(skipped="a sync holds the session store; it fetches itself")
    return FetchResult(updated=before != after, head=after)


def fetch_loop(
    env: SessionEnv,
    settings: SessionSyncSettings,
    *,
    interval: float,
    cycles: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """The background fetcher: fetch every ``interval`` seconds, ``cycles`` times (forever when
    None). A failed fetch (network down) is logged and retried next cycle. Returns the number
    of cycles that brought something new."""
    updates = 0
    done = 0
    while cycles is None or done < cycles:
        try:
            updates += fetch_once(env, settings, wait=interval).updated
        except ServiceError as exc:
            log.warning("session store fetch failed: %s", exc.line())
        done += 1
        if cycles is None or done < cycles:
            sleep(interval)
    return updates


def session_start(
    hook: HookInput,
    env: SessionEnv,
    settings: SessionSyncSettings | None = None,
    *,
    fetch: bool = True,
    restore: bool = True,
) -> StartInfo:
    """Find the session UUID recorded for ``hook.cwd``; put its transcript where ``claude
    --resume`` looks when this machine lacks it. Offline, the local files still answer."""
    settings = settings or SessionSyncSettings()
    info = StartInfo(cwd=hook.cwd)
    if fetch:
        try:
            result = fetch_once(env, settings, wait=settings.lock_timeout)
            info.fetched = result.skipped is None
            info.fetch_error = result.skipped
        except ServiceError as exc:
            info.fetch_error = exc.line()
            log.warning("session store fetch failed; using the local copy: %s", exc.line())
    found = [m for m in list_sessions(env) if same_dir(m.cwd, hook.cwd)]
    if not found:
        return info
    meta = info.meta = found[0]
    info.session_id = meta.session_id
    info.current = meta.session_id == hook.session_id
    if restore and not info.current and meta.machine != env.machine:
        info.restored = _restore(env, meta, hook.cwd, settings)
    info.context = _start_context(info, env)
    return info


def _restore(
    env: SessionEnv, meta: SessionMeta, cwd: str, settings: SessionSyncSettings
) -> Path | None:
    """Copy the stored transcript into claude's projects folder when this machine has none
    (never over a local one), and mark those lines as already given to this machine."""
    target = env.transcript_path(meta.session_id, cwd)
    folder = env.session_dir(meta.session_id)
    with workspace_lock(env.lock_dir, settings.lock_timeout):
        if target.exists():
            return None
        lines = read_lines(folder / ACTIVE)
        if not lines:
            return None
        write_transcript(target, lines)
        state = load_state(env, meta.session_id)
        state.delivered[meta.machine] = read_linecount(folder / LINECOUNT, len(lines))
        state_file(env, meta.session_id).write(state)
    return target


def _start_context(info: StartInfo, env: SessionEnv) -> str:
    meta = info.meta
    if meta is None:
        return ""
    where = "this machine" if meta.machine == env.machine else meta.machine
    when = meta.updated_at.strftime("%Y-%m-%d %H:%M UTC")
    if info.current:
        return (
            f"Session sync: this session ({meta.session_id}) is shared through the session "
            f"store; last pushed from {where} at {when}. Each prompt brings in what the other "
            "machine added."
        )
    lines = [
        f"Session sync: the session recorded for {info.cwd} is {meta.session_id} (last active "
        f"on {where} at {when}, {meta.lines} transcript lines). To continue it here, restart "
        f"with `claude --resume {meta.session_id}`."
    ]
    if info.restored:
        lines.append(f"Its transcript was copied to {info.restored} so the resume finds it.")
    if info.fetch_error:
        lines.append(f"(The store could not be refreshed: {info.fetch_error}.)")
    return " ".join(lines)
