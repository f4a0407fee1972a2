"""At most ``max_running_workflows`` workflows run at once on this machine (#28 R13): with
``local`` or ``systemd`` dispatch every dispatch used to start at once, whatever else ran.

- **Slots**: ``$HARNESS_HOME/locks/workflow-slot-<n>.lock``, each held (flock) by one running
  workflow process for its whole life. The kernel lets go of it when the process ends, however
  it ends, so a killed run never keeps a slot.
- **The queue**: ``$HARNESS_HOME/run-queue.json``, oldest first, on disk before anything starts:
  a crash loses no waiting run. :func:`admit` (the dispatcher) queues the payload and says
  whether it may start now: it is the oldest still waiting and a slot is free. A run started
  that way is *launched* until its process :func:`claim`s a slot, which takes it off the
  queue; until then it counts as running, so two dispatchers never start more than the cap.
- :func:`pump` starts the waiting runs, oldest first, while slots are free: every poll-slack
  and mr-monitor cycle calls it, and each capped run when it ends.

Only a run with a queue entry is capped: an operator's own ``harness investigate CASE`` is
not, nor ``inline``, ``record`` and ``gitlab-ci`` dispatch (that one has its own cap). A
launched run whose process never claimed its slot within :data:`LAUNCH_GRACE_S` leaves the
queue; the rule for runs that never began (:mod:`harness_cli.workflows.unbegun`) takes it
from there, as for any other dispatch.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.config import load_config
from harness_cli.errors import ConfigError, LockHeld
from harness_cli.logs import event
from harness_cli.state.store import JsonFile

log = logging.getLogger("harness.dispatch")

CAPPED = ("local", "systemd")
"""The dispatch backends the cap applies to (both start runs on this machine)."""
DEFAULT_CAP = 4
LAUNCH_GRACE_S = 120.0
"""How long a launched run has to start and claim its slot before its place is given up."""
CLAIM_ATTEMPTS = 3

_HELD: list[IO[bytes]] = []
"""The slot this process holds (its file stays open, and locked, until the process ends)."""


class Waiting(BaseModel):
    model_config = ConfigDict(extra="allow")
    payload: str
    """The payload file, absolute."""
    queued_at: datetime
    launched_at: datetime | None = None
    """Started, and not yet holding its slot."""


class RunQueue(BaseModel):
    """``$HARNESS_HOME/run-queue.json``."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = 1
    waiting: list[Waiting] = Field(default_factory=list)
    """Oldest first."""


def queue_file() -> JsonFile[RunQueue]:
    return JsonFile(paths.state_file("run-queue.json"), RunQueue)


def cap() -> int:
    """harness.yaml ``max_running_workflows`` (its default when the config cannot be read:
    the run that reads it next says what is wrong)."""

    try:
        return load_config().harness.max_running_workflows
    except ConfigError:
        return DEFAULT_CAP


def admit(payload_file: Path) -> bool:
    """Queue ``payload_file`` (once) and say whether it may start now; if so it is launched."""
    key = str(Path(payload_file).absolute())
    limit = cap()
    with queue_file().update() as queue:
        entry = next((w for w in queue.waiting if w.payload == key), None)
        if entry is None:
            entry = Waiting(payload=key, queued_at=clock.now())
            queue.waiting.append(entry)
        _expire(queue)
        if entry.launched_at is not None:
            return False  # started already; its process claims the slot
        head = next(w for w in queue.waiting if w.launched_at is None)
        if head is not entry or _busy(queue) >= limit:
            event(log, "run_waiting", payload=key, ahead=queue.waiting.index(entry))
            return False
        entry.launched_at = clock.now()
    return True


def pump(start: Callable[[Path], bool]) -> list[str]:
    """Start waiting runs, oldest first, while slots are free (``start`` launches one payload,
    True when it started). Returns one line per run started."""
    if not queue_file().path.exists():
        return []
    limit = cap()
    with queue_file().update() as queue:
        _expire(queue)
        free = limit - _busy(queue)
        chosen = [w for w in queue.waiting if w.launched_at is None][: max(0, free)]
        for entry in chosen:
            entry.launched_at = clock.now()
    lines = []
    for entry in chosen:
        if start(Path(entry.payload)):
            lines.append(f"started {Path(entry.payload).name} (it had waited for a free slot)")
        else:
            _unlaunch(entry.payload)
    return lines


def claim(payload_file: str) -> bool:
    """In the workflow process, at its start: hold a free slot for the rest of its life (True)
    when its payload is queued; False when it is not (an uncapped run). No slot free (another
    start took it first): back to waiting in its place, and LockHeld (exit 3)."""
    if not payload_file or not queue_file().path.exists():
        return False
    key = str(Path(payload_file).absolute())
    if all(w.payload != key for w in queue_file().read().waiting):
        return False
    limit = cap()
    for attempt in range(CLAIM_ATTEMPTS):  # another process's look at a free slot holds it
        for index in range(limit):  # for an instant: a second pass finds it free again
            slot = _try_slot(index)
            if slot is not None:
                _HELD.append(slot)
                with queue_file().update() as queue:
                    queue.waiting = [w for w in queue.waiting if w.payload != key]
                event(log, "run_slot_taken", payload=key, slot=index, attempt=attempt)
                return True
        time.sleep(0.05)
    _unlaunch(key)
    raise LockHeld(
        f"all {limit} workflow slots are busy (max_running_workflows); this run waits its turn",
        hint="it is in run-queue.json and starts by itself when a slot frees",
    )


def forget(payload_file: str) -> None:
    """Take ``payload_file`` off the queue: its run will not happen (held back by a pause,
    which replays it as a new payload)."""
    if not payload_file or not queue_file().path.exists():
        return
    key = str(Path(payload_file).absolute())
    with queue_file().update() as queue:
        queue.waiting = [w for w in queue.waiting if w.payload != key]


def release() -> bool:
    """Give back this process's slot (before it starts the next waiting run)."""
    held = bool(_HELD)
    while _HELD:
        _HELD.pop().close()
    return held


def waiting(payload_file: Path | None = None) -> bool:
    """Whether ``payload_file`` (None: any run) is in the queue — not begun, and not owed to
    anyone else."""
    if not queue_file().path.exists():
        return False
    key = str(Path(payload_file).absolute()) if payload_file else ""
    return any(w.payload == key or not key for w in queue_file().read().waiting)


def queued() -> list[str]:
    """The payload files waiting for a slot, oldest first (``harness status``)."""
    if not queue_file().path.exists():
        return []
    return [Path(w.payload).name for w in queue_file().read().waiting if w.launched_at is None]


def _busy(queue: RunQueue) -> int:
    """Slots held, plus runs launched that have not taken theirs yet."""
    return len(_held_slots()) + sum(w.launched_at is not None for w in queue.waiting)


def _held_slots() -> list[Path]:
    """The slot files some process holds, read from ``/proc/locks`` (looking never takes a
    lock, so a run claiming its slot at that instant never finds it taken by the look)."""
    slots = {}
    for path in paths.locks_dir().glob("workflow-slot-*.lock"):
        with contextlib.suppress(OSError):
            info = path.stat()
            key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
            slots[key] = path
    try:
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return list(slots.values())  # cannot tell: count them all busy (fail closed)
    held = {fields[5] for fields in map(str.split, table.splitlines()) if len(fields) > 5
            and fields[1] == "FLOCK"}  # fmt: skip
    return [path for key, path in slots.items() if key in held]


def _try_slot(index: int) -> IO[bytes] | None:
    path = paths.locks_dir() / f"workflow-slot-{index}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    os.set_inheritable(handle.fileno(), False)
    return handle


def _expire(queue: RunQueue) -> None:
    """A launched run that never claimed its slot: off the queue (``unbegun`` owns it now)."""
    limit = clock.now() - timedelta(seconds=LAUNCH_GRACE_S)
    gone = [w for w in queue.waiting if w.launched_at is not None and w.launched_at < limit]
    for entry in gone:
        event(log, "run_never_claimed_its_slot", logging.WARNING, payload=entry.payload)
    queue.waiting = [w for w in queue.waiting if w not in gone]


def _unlaunch(key: str) -> None:
    with queue_file().update() as queue:
        for entry in queue.waiting:
            if entry.payload == key:
                entry.launched_at = None
