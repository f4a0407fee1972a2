"""The session store's settings, files and places: what :mod:`sessions` syncs, and where.

The store is a private git repository, one directory per claude session UUID::

    sessions/<uuid>/active.jsonl      the last writer's transcript, cut to its last 1,000 lines
    sessions/<uuid>/active.linecount  that transcript's true total line count
    sessions/<uuid>/session.meta      who wrote it last, from which working directory, when

Each machine keeps its own watermarks (how many of the other machine's lines it has already
been given) under ``$HARNESS_HOME/session-sync/``, outside the repository: a ``git reset
--hard`` must never move them.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import paths
from harness_cli.errors import InputError

SESSIONS_DIR = "sessions"
ACTIVE = "active.jsonl"
LINECOUNT = "active.linecount"
META = "session.meta"

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


class SessionSyncSettings(BaseModel):
    """Limits of the session sync (``session_sync:`` in harness.yaml once wired)."""

    model_config = ConfigDict(extra="forbid")

    throttle_seconds: float = Field(default=30.0, ge=0)
    """"A throttle, configurable and defaulting to 30 seconds, skips the full sync on rapid
    keystrokes so there's no per-character git latency." 0 disables it."""
    max_transcript_lines: int = Field(default=1000, ge=1)
    """"Transcripts get cut to 1,000 lines before a push to stay under the 25 MiB git limit."
    The true total goes to ``active.linecount`` so the cut never resets a watermark."""
    fetch_interval_seconds: float = Field(default=5.0, gt=0)
    """"A background fetcher runs every 5 seconds on each machine to keep the local copy
    current." """
    max_context_chars: int = Field(default=9500, ge=500)
    """Longest delta injected into the prompt. Claude Code passes ~10,000 characters of hook
    output whole and shrinks more to a short preview, so the newest messages that fit are
    injected and the full delta stays in a file the model can read."""
    message_chars: int = Field(default=600, ge=40)
    """Longest rendering of one message in the injected delta."""
    lock_timeout: float = Field(default=20.0, gt=0)
    """Seconds a hook waits for another sync on this machine; a prompt must not hang on it."""
    git_timeout: float = Field(default=20.0, gt=0)
    """Seconds one git command may take; claude kills a hook after 60 s by default."""
    max_push_attempts: int = Field(default=3, ge=1)
    """Full fetch-extract-push rounds tried when the other machine pushed in between."""


class SessionMeta(BaseModel):
    """``session.meta``: written by the machine that pushed ``active.jsonl`` last. Extra keys
    are ignored, so a newer harness on the other machine can add fields."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int = 1
    session_id: str
    """The claude session UUID; one UUID follows the operator across machines."""
    cwd: str
    """The working directory claude ran in; SessionStart finds the UUID by it."""
    machine: str
    """The machine whose transcript ``active.jsonl`` holds."""
    updated_at: datetime
    lines: int = 0
    """The true total line count of that transcript (as in ``active.linecount``)."""


class SyncState(BaseModel):
    """One session's watermarks on this machine (``$HARNESS_HOME/session-sync/<uuid>.json``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    session_id: str = ""
    delivered: dict[str, int] = Field(default_factory=dict)
    """Per other machine: how many lines of its transcript were already given to this one."""
    pushed_lines: int = 0
    """This machine's transcript length at its last successful push."""
    last_sync: datetime | None = None
    """Start of the last full sync; the throttle counts from it."""
    pending_from: str | None = None
    """The machine whose lines wait in the pending file (step 2's temp file)."""
    pending_cut: int = 0
    """Lines of that machine's transcript the store's truncation removed before we saw them."""


@dataclass(frozen=True)
class HookInput:
    """What claude sends a command hook on stdin (unknown keys are ignored)."""

    session_id: str
    cwd: str
    transcript_path: str | None = None
    hook_event_name: str | None = None
    source: str | None = None
    """SessionStart only: startup, resume, clear or compact."""
    prompt: str | None = None
    """UserPromptSubmit only."""

    @classmethod
    def parse(cls, text: str) -> HookInput:
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"the hook input is not JSON ({exc.msg} at line {exc.lineno})",
                hint="claude passes the hook event as one JSON object on stdin",
            ) from None
        if not isinstance(data, dict):
            raise InputError("the hook input is not a JSON object")
        missing = [key for key in ("session_id", "cwd") if not isinstance(data.get(key), str)]
        if missing:
            raise InputError(f"the hook input lacks {', '.join(missing)}")

        def opt(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        return cls(
            session_id=check_session_id(data["session_id"]),
            cwd=data["cwd"],
            transcript_path=opt("transcript_path"),
            hook_event_name=opt("hook_event_name"),
            source=opt("source"),
            prompt=opt("prompt"),
        )


@dataclass(frozen=True)
class SessionEnv:
    """Where one machine keeps things. Built from the environment at the CLI edge; tests build
    one per simulated machine."""

    repo: Path
    remote: str | None
    machine: str
    state_dir: Path
    lock_dir: Path
    claude_home: Path

    @classmethod
    def from_env(cls) -> SessionEnv:
        """``HARNESS_SESSIONS_REPO`` [``$HARNESS_HOME/sessions-repo``],
        ``HARNESS_SESSIONS_REMOTE`` [the clone's origin], ``HARNESS_MACHINE`` [hostname],
        ``CLAUDE_CONFIG_DIR`` [``$HOME/.claude``]."""
        home = paths.home()
        repo = os.environ.get("HARNESS_SESSIONS_REPO")
        claude = os.environ.get("CLAUDE_CONFIG_DIR")
        return cls(
            repo=Path(repo).expanduser() if repo else home / "sessions-repo",
            remote=os.environ.get("HARNESS_SESSIONS_REMOTE") or None,
            machine=os.environ.get("HARNESS_MACHINE") or socket.gethostname() or "machine",
            state_dir=home / "session-sync",
            lock_dir=paths.locks_dir() / "session-sync",
            claude_home=Path(claude).expanduser() if claude else Path.home() / ".claude",
        )

    def session_dir(self, session_id: str) -> Path:
        return self.repo / SESSIONS_DIR / session_id

    def state_path(self, session_id: str) -> Path:
        return self.state_dir / f"{session_id}.json"

    def pending_path(self, session_id: str) -> Path:
        """Step 2's temp file: the extracted delta, kept until it has been handed out."""
        return self.state_dir / f"{session_id}.pending.jsonl"

    def delta_path(self, session_id: str) -> Path:
        """The last delta handed out, whole (the injected text may be shortened)."""
        return self.state_dir / f"{session_id}.delta.jsonl"

    def transcript_path(self, session_id: str, cwd: str) -> Path:
        return self.claude_home / "projects" / project_dir_name(cwd) / f"{session_id}.jsonl"


def check_session_id(value: str) -> str:
    """A session id names a directory in the store, so it must be one safe path component."""
    if not _SAFE_ID.match(value):
        raise InputError(f"session id {value!r} is not a claude session UUID")
    return value


def project_dir_name(cwd: str) -> str:
    """Claude's folder for a working directory: every non-alphanumeric character becomes ``-``
    (measured with CLI 2.1.197: ``/tmp/w/my_proj.v2`` → ``-tmp-w-my-proj-v2``)."""
    return _NOT_ALNUM.sub("-", cwd)


def same_dir(a: str, b: str) -> bool:
    return os.path.normpath(a) == os.path.normpath(b)


# -- transcripts ---------------------------------------------------------------------------------


def complete_lines(data: bytes) -> list[bytes]:
    """The complete lines of a JSONL file. A last line without its newline is still being
    written by claude; it is left for the next sync."""
    lines = data.splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines.pop()
    return lines


def read_lines(path: Path) -> list[bytes]:
    try:
        return complete_lines(path.read_bytes())
    except FileNotFoundError:
        return []


def record_uuid(line: bytes) -> str | None:
    """The ``uuid`` of a transcript record, or None (unknown record types may lack one)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    value = obj.get("uuid") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def read_meta(path: Path) -> SessionMeta | None:
    """A ``session.meta``, or None when it is missing or unreadable (another machine's bug must
    not stop this one)."""
    try:
        return SessionMeta.model_validate_json(path.read_bytes())
    except (FileNotFoundError, ValidationError, ValueError):
        return None


def read_linecount(path: Path, fallback: int) -> int:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return fallback
