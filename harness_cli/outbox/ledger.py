"""The outbox's ledger: one file per obligation under ``$HARNESS_HOME/outbox/``.

Reference 003 ("retries with idempotency"): "Persist an application-managed operation ID before
dispatch … reuse it when recovering the same intended command." So an outward write the
harness owes is written here *before* it is attempted, under its idempotency key (whose
obligation, what for, where), and it stays until the service confirmed it:

- ``outbox/<digest>.json`` — owed: not confirmed yet. ``inflight`` says an attempt started
  and its answer is not known (the process may have died mid-call): the next attempt first
  looks the write up at the service (Slack metadata, a GitLab note's marker).
- ``outbox/done/<digest>.json`` — met, with what the service answered (a Slack ts); kept
  ``outbox_keep_done_days`` so a resumed run finds it instead of writing again.
- ``outbox/given-up/<digest>.json`` — ``outbox_max_attempts`` ran out; the operator is told
  once (``told``).

One file each, so a post never rewrites a shared file, two runs never contend for one lock,
and the creation of an obligation is atomic (``atomic_create_bytes``: exactly one creator).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import clock, paths
from harness_cli.logs import event
from harness_cli.state.locks import hold
from harness_cli.state.store import atomic_create_bytes, atomic_write_text

log = logging.getLogger("harness.outbox")

State = Literal["owed", "done", "given_up"]
FOLDERS: dict[State, str] = {"owed": "", "done": "done", "given_up": "given-up"}


class Obligation(BaseModel):
    """One outward write the harness owes."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    key: str
    """The idempotency key: ``<scope>|<purpose>|<target>|<n>`` (see :mod:`scope`)."""
    case_id: str = ""
    service: Literal["slack", "gitlab", "jira"] = "slack"
    action: Literal[
        "post", "update", "react", "note", "reply", "comment", "transition", "assign"
    ] = "post"
    purpose: str = "post"
    """What the write is for (``investigation_result``, ``status``, ``mr_merged`` …)."""
    target: dict[str, str] = Field(default_factory=dict)
    """Where it goes: ``channel``/``thread_ts``/``ts``/``name`` (Slack), ``project``/``iid``/
    ``discussion_id`` (GitLab), ``issue``/``to``/``assignee``/``n`` (Jira)."""
    text: str = ""
    """The text as it leaves (already through the one redaction point)."""
    owed: bool = True
    """False: best effort (a status placeholder) — never delivered late by a later run."""
    retried_by: str = ""
    """"": the outbox's flush retries it; ``intake``: the message's lifecycle does."""
    state: State = "owed"
    created_at: datetime
    created_epoch: float = 0.0
    """Wall-clock epoch (Slack's clock) when it was recorded: a lookup starts from here."""
    attempts: int = 0
    inflight: bool = False
    """An attempt started and its answer is unknown: look the write up before redoing it."""
    last_error: str = ""
    last_attempt_at: datetime | None = None
    result: str = ""
    """What the service confirmed (the Slack ts of the post)."""
    done_at: datetime | None = None
    told: bool = False
    """Given up: the operator has been told."""

    @property
    def digest(self) -> str:
        return digest(self.key)

    def describe(self) -> str:
        where = (
            self.target.get("channel") or self.target.get("project") or self.target.get("issue", "")
        )
        thread = self.target.get("thread_ts") or self.target.get("iid", "")
        return f"{self.purpose} {self.action} to {where}{'/' + thread if thread else ''}"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def root() -> Path:
    return paths.home() / "outbox"


def path_for(key: str, state: State = "owed") -> Path:
    sub = FOLDERS[state]
    base = root() / sub if sub else root()
    return base / f"{digest(key)}.json"


def find(key: str) -> Obligation | None:
    """The obligation under ``key`` in whatever state it is, or None."""
    for state in ("done", "owed", "given_up"):
        found = _read(path_for(key, state))
        if found is not None:
            return found
    return None


def create(ob: Obligation) -> tuple[Obligation, bool]:
    """Record ``ob`` unless its key is already known; returns (the recorded one, created)."""
    existing = find(ob.key)
    if existing is not None:
        return existing, False
    data = (ob.model_dump_json(indent=2) + "\n").encode("utf-8")
    # Verbatim: the text already passed the redaction point on its way into the outbox.
    if atomic_create_bytes(path_for(ob.key), data, verbatim=True):
        return ob, True
    again = find(ob.key)
    return (again or ob), False


def save(ob: Obligation) -> None:
    """Write ``ob`` where its state says (moving it out of the folder it was in)."""
    target = path_for(ob.key, ob.state)
    atomic_write_text(target, ob.model_dump_json(indent=2) + "\n", verbatim=True)
    for state in FOLDERS:
        if state != ob.state:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path_for(ob.key, state))


def failed(ob: Obligation, error: str, *, inflight: bool, limit: int) -> None:
    """One attempt failed: keep its error and whether it may have landed (``inflight``: the
    next attempt looks for it first); after ``limit`` attempts the obligation is given up, once
    (#20: "given up after a bounded number of attempts", the operator told by another path)."""
    ob.inflight = inflight
    ob.last_error = error[:500]
    if ob.attempts >= limit and ob.state == "owed":
        ob.state = "given_up"
        event(
            log, "owed_write_given_up", logging.ERROR, key=ob.key, case_id=ob.case_id,
            what=ob.describe(), attempts=ob.attempts, error=ob.last_error,
        )  # fmt: skip
    save(ob)


def drop(ob: Obligation) -> None:
    """Forget a best-effort write that failed (nobody owes it any more)."""
    for state in FOLDERS:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path_for(ob.key, state))


@contextlib.contextmanager
def attempt_lock(ob: Obligation, *, timeout: float = 0) -> Iterator[None]:
    """One attempt at a time per obligation, across processes (LockHeld: another run is at it
    right now)."""
    with hold(f"outbox-{ob.digest}", timeout=timeout, what=f"the owed {ob.describe()}"):
        yield


def owed(case_id: str | None = None) -> list[Obligation]:
    """Every obligation still owed (of one case), oldest first."""
    found = [o for o in _scan(root()) if case_id is None or o.case_id == case_id]
    return sorted(found, key=lambda o: o.created_epoch)


def given_up() -> list[Obligation]:
    return sorted(_scan(root() / FOLDERS["given_up"]), key=lambda o: o.created_epoch)


def prune_done(keep_days: float) -> int:
    """Forget met obligations older than ``keep_days`` (by file age)."""
    folder = root() / FOLDERS["done"]
    horizon = time.time() - keep_days * 86400
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.name.endswith(".json") and entry.stat().st_mtime < horizon:
                os.unlink(entry.path)
                removed += 1
    return removed


def new(key: str, **fields: Any) -> Obligation:
    return Obligation(key=key, created_at=clock.now(), created_epoch=time.time(), **fields)


def _scan(folder: Path) -> list[Obligation]:
    try:
        entries = [e for e in os.scandir(folder) if e.is_file() and e.name.endswith(".json")]
    except FileNotFoundError:
        return []
    found = []
    for entry in entries:
        ob = _read(Path(entry.path))
        if ob is not None:
            found.append(ob)
    return found


def _read(path: Path) -> Obligation | None:
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return Obligation.model_validate_json(raw)
    except (ValidationError, ValueError):
        # A torn write cannot happen (atomic renames); a hand-edited file is moved aside so it
        # never blocks the rest of the outbox.
        with contextlib.suppress(OSError):
            os.replace(path, path.with_name(path.name + f".corrupt-{clock.stamp()}"))
        return None
