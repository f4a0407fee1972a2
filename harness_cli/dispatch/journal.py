"""The run journal: every workflow run is recorded from its start to its end, so one killed at
any instruction is finished by the next run — exactly once (issue #17 point 8).

``$HARNESS_HOME/runs/<workflow>-<case>-<digest>.json`` holds one run: what it is (the payload,
or the workflow, case and arguments of a run typed at a shell), who runs it (``host:pid:start``),
its state (``running`` → ``done`` | ``failed``; ``abandoned`` after too many deaths) and the
checkpoints it passed. A run starts inside its per-(workflow, case) lock, so a record still
``running`` then belongs to a dead process: the new run *resumes* it —

- it opens the dead run's obligation scope, so every post, edit and note the dead run already
  made is found (in the outbox, or at the service) and not made again, and its live status
  message is the one the resumed run edits to its end;
- it reads the dead run's checkpoints, so a workflow skips what is durably done (a published
  investigation only owes its post; a pushed branch only its MR);
- it commits what the dead run left uncommitted in the case folder first.

A run nobody starts again (its dispatcher died with it) is re-dispatched by the next poll-slack
or mr-monitor cycle (:func:`adopt_stranded`), at most ``run_max_resumes`` times; then the
operator is told once and the case handed back in a state they can act on.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import clock, paths
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.outbox import scope
from harness_cli.state.dedup import is_alive, me
from harness_cli.state.locks import hold
from harness_cli.state.store import atomic_write_text

log = logging.getLogger("harness.runs")

RunState = Literal["running", "done", "failed", "abandoned"]


class RunRecord(BaseModel):
    """One workflow run, from its start to its end."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    run: str
    """The run's key: its obligation scope. Stable across resumes."""
    identity: str
    """What work it is: the payload's key (or file), or ``manual:<workflow args>``."""
    workflow: str
    case_id: str
    args: dict[str, Any] = Field(default_factory=dict)
    payload: str = ""
    """The payload file it was started from (empty: typed at a shell)."""
    state: RunState = "running"
    owner: str = ""
    started_at: datetime
    updated_at: datetime
    resumes: int = 0
    """How often a dead run of this record was taken over."""
    redispatched_at: float = 0.0
    """Wall-clock epoch of the last re-dispatch by a cycle (0: not re-dispatched since it
    died)."""
    checkpoints: dict[str, Any] = Field(default_factory=dict)
    """Durable steps passed, with what a resumed run needs from them."""
    outcome: str = ""
    told: bool = False


class Run:
    """The current run's handle: checkpoints in, checkpoints out."""

    def __init__(self, record: RecordRef) -> None:
        self._ref = record

    @property
    def record(self) -> RunRecord:
        return self._ref.record

    @property
    def resumed(self) -> bool:
        return self._ref.resumed

    def recall(self, name: str) -> Any:
        """What checkpoint ``name`` saved, if this run (or the dead run it resumes) passed it."""
        return self.record.checkpoints.get(name)

    def checkpoint(self, name: str, value: Any = True) -> None:
        """Record that the run passed ``name`` (JSON-serialisable ``value``), durably, now."""
        self.record.checkpoints[name] = value
        self.record.updated_at = clock.now()
        self._ref.save()
        crash_point(f"run.{self.record.workflow}.{name}")


class RecordRef:
    def __init__(self, path: Path, record: RunRecord, resumed: bool) -> None:
        self.path, self.record, self.resumed = path, record, resumed

    def save(self) -> None:
        atomic_write_text(self.path, self.record.model_dump_json(indent=2) + "\n")


_current: contextvars.ContextVar[Run | None] = contextvars.ContextVar("run", default=None)


def current() -> Run | None:
    """The run this code executes in (None outside any workflow run)."""
    return _current.get()


def root() -> Path:
    return paths.home() / "runs"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _path(workflow: str, case_id: str, identity: str) -> Path:
    return root() / f"{workflow}-{case_id}-{_digest(identity)}.json"


def record_path(workflow: str, case_id: str, identity: str) -> Path:
    """Where the run of that identity is recorded (it exists once the run began)."""
    return _path(workflow, case_id, identity)


def identity_of(workflow: str, payload: Any | None, args: dict[str, Any] | None) -> str:
    """The work a run is: its payload (its key, else its file), or what was typed."""
    if payload is not None:
        resume = (payload.args or {}).get("resume_run")
        if resume:
            return str(resume)
        return str(payload.key or "")
    clean = {k: v for k, v in sorted((args or {}).items()) if k not in ("plan_approved",)}
    return f"manual:{workflow}:{json.dumps(clean, sort_keys=True, default=str)}"


@contextlib.contextmanager
def running(
    workflow: str,
    case_id: str,
    *,
    payload: Any | None = None,
    payload_file: str = "",
    args: dict[str, Any] | None = None,
) -> Iterator[Run]:
    """Record the run (or resume a dead one), open its obligation scope, and record its end.
    Call it with the per-(workflow, case) lock held."""

    identity = identity_of(workflow, payload, args) or f"payload:{payload_file}"
    path = _path(workflow, case_id, identity)
    with hold(f"run-{path.stem}", timeout=30, what=f"the run record of {workflow} {case_id}"):
        record = read(path)
        resumed = record is not None and record.state == "running"
        if record is None or record.state != "running":
            now = clock.now()
            generation = f"{identity}#{clock.stamp()}" if record is not None else identity
            record = RunRecord(
                run=_digest(generation),
                identity=identity,
                workflow=workflow,
                case_id=case_id,
                args=dict(args or {}),
                payload=payload_file,
                started_at=now,
                updated_at=now,
            )
        else:
            record.resumes += 1
            record.redispatched_at = 0.0
            event(
                log,
                "run_resumed",
                workflow=workflow,
                case_id=case_id,
                run=record.run,
                resumes=record.resumes,
                checkpoints=sorted(record.checkpoints),
            )
        record.owner, record.state, record.updated_at = me(), "running", clock.now()
        ref = RecordRef(path, record, resumed)
        ref.save()
    crash_point(f"run.{workflow}.started")
    run = Run(ref)
    token = _current.set(run)
    try:
        with scope.opened(f"{workflow}:{case_id}:{record.run}", case_id):
            try:
                yield run
            except BaseException as exc:
                _end(ref, "failed", f"{type(exc).__name__}: {exc}"[:300])
                raise
            _end(ref, "done", "")
    finally:
        _current.reset(token)


def _end(ref: RecordRef, state: RunState, outcome: str) -> None:
    ref.record.state, ref.record.outcome = state, outcome
    ref.record.updated_at = clock.now()
    ref.save()


def records() -> list[tuple[Path, RunRecord]]:
    found = []
    try:
        entries = sorted(os.scandir(root()), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.name.endswith(".json"):
            record = read(Path(entry.path))
            if record is not None:
                found.append((Path(entry.path), record))
    return found


def stranded() -> list[tuple[Path, RunRecord]]:
    """Runs still marked running whose process is gone."""

    return [(p, r) for p, r in records() if r.state == "running" and not is_alive(r.owner)]


def prune(keep_days: float) -> int:
    """Forget ended runs older than ``keep_days``."""
    horizon = time.time() - keep_days * 86400
    removed = 0
    for path, record in records():
        if record.state != "running" and record.updated_at.timestamp() < horizon:
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed


def read(path: Path) -> RunRecord | None:
    try:
        return RunRecord.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (ValidationError, ValueError):
        aside = path.with_name(path.name + f".corrupt-{clock.stamp()}")
        with contextlib.suppress(OSError):
            os.replace(path, aside)
        event(log, "run_record_unreadable", logging.ERROR, path=str(path), moved_to=str(aside))
        return None
