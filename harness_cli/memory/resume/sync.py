"""Claude sessions that resume on either machine: the git-backed session store's prompt sync.

The UserPromptSubmit hook runs :func:`sync_prompt`, three steps in strict order under one
flock (reference, "Resuming a session on either machine"):

1. Fetch and reset: ``active.jsonl`` now holds the other machine's transcript.
2. Extract the delta BEFORE overwriting: the lines past this machine's watermark for the other
   machine go to a temp file. An earlier bug had steps 2 and 3 swapped, so the injection kept
   reading the machine's own transcript back to itself.
3. Push our own transcript: copy it to ``active.jsonl`` (cut to 1,000 lines, the true total in
   ``active.linecount``), commit, push.

After the flock lets go the delta is injected: "the other machine added N messages since the
last sync". Two machines, as in the reference: a third would overwrite a second's transcript
before the first had read it.

Watermarks count lines of the *other* machine's transcript (its true total, never ``wc -l`` of
a cut file), so a cut never redelivers. Records whose ``uuid`` this machine's own transcript
already holds are dropped too: after a resume, the other transcript starts with our history.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from harness_cli import clock
from harness_cli.errors import ServiceError
from harness_cli.memory.resume.model import (
    ACTIVE,
    LINECOUNT,
    META,
    SESSIONS_DIR,
    HookInput,
    SessionEnv,
    SessionMeta,
    SessionSyncSettings,
    SyncState,
    read_linecount,
    read_lines,
    read_meta,
    record_uuid,
)
from harness_cli.memory.resume.render import render_delta
from harness_cli.services.git import Git, PushRejected
from harness_cli.state.store import JsonFile, atomic_write_bytes
from harness_cli.workspace.gitsync import (
    DEFAULT_BRANCH,
    FRESH_INDEX_LOCK_WAIT,
    REMOTE,
    _prepare,
    ensure_repo,
    workspace_lock,
)

log = logging.getLogger(__name__)

STALE_INDEX_LOCK = 60.0
"""An ``index.lock`` this old, found while we hold the flock, was left by a killed git."""


@dataclass
class Extracted:
    """Step 2's finding: the other machine's lines past our watermark."""

    writer: str | None = None
    """The machine whose transcript ``active.jsonl`` held; None when it was ours or absent."""
    lines: list[bytes] = field(default_factory=list)
    cut: int = 0
    total: int = 0
    """The writer's true transcript length (the new watermark)."""


@dataclass
class PromptSync:
    """What one :func:`sync_prompt` did and what it hands to claude."""

    session_id: str
    context: str = ""
    """The text to inject; empty when the other machine added no message."""
    messages: int = 0
    lines: list[bytes] = field(default_factory=list)
    """The other machine's new transcript lines, whole."""
    writer: str | None = None
    cut: int = 0
    pushed: bool = False
    pushed_lines: int = 0
    attempts: int = 0
    skipped: str | None = None


# -- store and state --------------------------------------------------------------------------


def open_store(env: SessionEnv, settings: SessionSyncSettings) -> Git | None:
    """The local clone (cloned or initialized on first use); None without a remote."""
    git = Git(env.repo, timeout=settings.git_timeout)
    if (env.repo / ".git").exists():
        return git if git.has_remote(REMOTE) else None
    if env.remote is None:
        return None
    ensure_repo(env.repo, env.remote, lock_dir=env.lock_dir, lock_timeout=settings.lock_timeout)
    return git


def state_file(env: SessionEnv, session_id: str) -> JsonFile[SyncState]:
    return JsonFile(env.state_path(session_id), SyncState)


def load_state(env: SessionEnv, session_id: str) -> SyncState:
    state = state_file(env, session_id).read()
    state.session_id = session_id
    return state


def throttled(state: SyncState, now: datetime, settings: SessionSyncSettings) -> str | None:
    """Why the full sync is skipped, or None to run it."""
    if state.last_sync is None or settings.throttle_seconds <= 0:
        return None
    age = (now - state.last_sync).total_seconds()
    if 0 <= age < settings.throttle_seconds:
        return f"throttled: last sync {age:.0f}s ago (< {settings.throttle_seconds:.0f}s)"
    return None


# -- the three steps --------------------------------------------------------------------------


def fetch_reset(git: Git) -> bool:
    """Step 1. False while the remote has no branch yet (nothing pushed by anyone)."""
    git.fetch(REMOTE)
    upstream = f"refs/remotes/{REMOTE}/{DEFAULT_BRANCH}"
    if git.head_sha(upstream) is None:
        return False
    git.run("reset", "-q", "--hard", upstream)
    # Files a killed step 3 left behind must not ride along with the next commit.
    git.run("clean", "-q", "-fd")
    return True


def lines_after_watermark(
    lines: list[bytes], total: int, watermark: int
) -> tuple[list[bytes], int]:
    """Step 2's arithmetic: the lines of a transcript past ``watermark``, given the stored tail
    ``lines`` of a transcript ``total`` lines long. Returns (new lines, lines lost to the cut).

    ``total`` is the true count from ``active.linecount``: with ``len(lines)`` instead, a
    1,000-line cut looks like a reset once the watermark passes 1,000, and everything is
    redelivered."""
    total = max(total, len(lines))
    if watermark > total:
        # Shorter than what we already took: the other transcript started over.
        watermark = 0
    first = total - len(lines)
    return lines[max(watermark - first, 0) :], max(first - watermark, 0)


def extract_delta(
    env: SessionEnv, session_id: str, state: SyncState, own: list[bytes]
) -> Extracted:
    """Step 2: what the store's ``active.jsonl`` adds to what this machine was already given.

    Must run before :func:`publish_own` overwrites the file (the swapped-order bug)."""
    folder = env.session_dir(session_id)
    meta = read_meta(folder / META)
    if meta is None or meta.machine == env.machine:
        return Extracted()
    stored = read_lines(folder / ACTIVE)
    total = read_linecount(folder / LINECOUNT, fallback=len(stored))
    seen = state.delivered.get(meta.machine, 0)
    if seen > total:
        log.warning(
            "session %s: %s's transcript is %d lines, fewer than the %d already taken; "
            "taking it as a new transcript",
            session_id,
            meta.machine,
            total,
            seen,
        )
    new, cut = lines_after_watermark(stored, total, seen)
    if new:
        mine = {u for u in map(record_uuid, own) if u}
        new = [line for line in new if (record_uuid(line) or "") not in mine]
    return Extracted(writer=meta.machine, lines=new, cut=cut, total=max(total, len(stored)))


def keep_pending(env: SessionEnv, state: SyncState, found: Extracted) -> None:
    """Save step 2's delta to the temp file, then advance the watermark. A crash in between
    delivers those lines twice, never zero times."""
    if found.writer is None:
        return
    if found.lines:
        pending = env.pending_path(state.session_id)
        pending.parent.mkdir(parents=True, exist_ok=True)
        with pending.open("ab") as handle:
            handle.write(b"".join(found.lines))
            handle.flush()
            os.fsync(handle.fileno())
    state.delivered[found.writer] = found.total
    state.pending_from = found.writer if found.lines else state.pending_from
    state.pending_cut += found.cut
    state_file(env, state.session_id).write(state)


def publish_own(
    git: Git, env: SessionEnv, hook: HookInput, own: list[bytes], settings: SessionSyncSettings
) -> bool:
    """Step 3: our transcript becomes ``active.jsonl``; commit and push (PushRejected when the
    other machine pushed since step 1). False when there was nothing to commit."""
    folder = env.session_dir(hook.session_id)
    folder.mkdir(parents=True, exist_ok=True)
    # Plain writes: a torn file is undone by the next step 1's reset, never pushed half.
    (folder / ACTIVE).write_bytes(b"".join(own[-settings.max_transcript_lines :]))
    (folder / LINECOUNT).write_text(f"{len(own)}\n")
    meta = SessionMeta(
        session_id=hook.session_id,
        cwd=hook.cwd,
        machine=env.machine,
        updated_at=clock.now(),
        lines=len(own),
    )
    (folder / META).write_text(meta.model_dump_json(indent=2) + "\n")
    git.add([f"{SESSIONS_DIR}/{hook.session_id}"])
    if git.commit(f"Sync session {hook.session_id} from {env.machine} ({len(own)} lines)") is None:
        return False
    git.push(REMOTE, DEFAULT_BRANCH)
    return True


def take_pending(env: SessionEnv, state: SyncState) -> tuple[list[bytes], str | None, int]:
    """Move the pending delta to the delta file (kept whole for the model to read) and clear
    it. Runs under the flock: a concurrent sync must not append between read and clear."""
    pending = env.pending_path(state.session_id)
    lines = read_lines(pending)
    writer, cut = state.pending_from, state.pending_cut
    if pending.exists():
        os.replace(pending, env.delta_path(state.session_id))
    if writer is not None or cut:
        state.pending_from, state.pending_cut = None, 0
        state_file(env, state.session_id).write(state)
    return lines, writer, cut


# -- the hook ---------------------------------------------------------------------------------


def own_transcript(env: SessionEnv, hook: HookInput) -> Path:
    if hook.transcript_path:
        return Path(hook.transcript_path)
    return env.transcript_path(hook.session_id, hook.cwd)


def sync_prompt(
    hook: HookInput, env: SessionEnv, settings: SessionSyncSettings | None = None
) -> PromptSync:
    """The UserPromptSubmit sync: steps 1-2-3 under the flock, then the delta to inject."""
    settings = settings or SessionSyncSettings()
    result = PromptSync(hook.session_id)
    git = open_store(env, settings)
    if git is None:
        result.skipped = "no session store remote: set HARNESS_SESSIONS_REMOTE"
        return result
    now = clock.now()
    # Checked before the flock too: a throttled keystroke must not queue behind a slow push.
    result.skipped = throttled(load_state(env, hook.session_id), now, settings)
    if result.skipped:
        return result
    with workspace_lock(env.lock_dir, settings.lock_timeout):
        state = load_state(env, hook.session_id)
        result.skipped = throttled(state, now, settings)
        if result.skipped:
            return result
        state.last_sync = now
        state_file(env, hook.session_id).write(state)
        _prepare(git, STALE_INDEX_LOCK, FRESH_INDEX_LOCK_WAIT)
        own = read_lines(own_transcript(env, hook))
        _sync_rounds(git, env, hook, state, own, settings, result)
        lines, writer, cut = take_pending(env, state)
    result.lines, result.writer, result.cut = lines, writer, cut
    result.context, result.messages = render_delta(
        lines,
        writer=writer or "the other machine",
        cut=cut,
        settings=settings,
        delta_file=env.delta_path(hook.session_id),
    )
    return result


def _sync_rounds(
    git: Git,
    env: SessionEnv,
    hook: HookInput,
    state: SyncState,
    own: list[bytes],
    settings: SessionSyncSettings,
    result: PromptSync,
) -> None:
    for attempt in range(1, settings.max_push_attempts + 1):
        result.attempts = attempt
        fetch_reset(git)  # 1
        keep_pending(env, state, extract_delta(env, hook.session_id, state, own))  # 2
        if not own or len(own) == state.pushed_lines:
            return  # nothing new of ours; the other machine read our last push before its own
        try:
            result.pushed = publish_own(git, env, hook, own, settings)  # 3
        except PushRejected:
            log.info("session %s: push rejected (attempt %d)", hook.session_id, attempt)
            continue
        state.pushed_lines = result.pushed_lines = len(own)
        state_file(env, hook.session_id).write(state)
        return
    raise ServiceError(
        f"session {hook.session_id}: push rejected {settings.max_push_attempts} times "
        "(the other machine kept pushing)",
        hint="nothing is lost; the next prompt syncs again",
    )


def write_transcript(path: Path, lines: list[bytes]) -> None:
    """Put a transcript where claude looks for it (atomic: claude may be starting)."""
    atomic_write_bytes(path, b"".join(lines))
