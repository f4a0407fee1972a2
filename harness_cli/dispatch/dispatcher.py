"""Start a workflow: write its payload file, then hand it to a backend
(:mod:`harness_cli.dispatch.backends`, chosen by ``HARNESS_DISPATCH``).

Whatever the backend, the workflow takes a per-(workflow, case) lock when it starts, so the
same workflow never runs twice at once on one case (the second exits 3). The payload
(:mod:`harness_cli.dispatch.payload`) carries everything a workflow needs besides the
workspace, so a backend can run it as a CI job or a Kubernetes Job on another machine
(ARCHITECTURE.md, "Scale").
"""

from __future__ import annotations

import logging
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from harness_cli import clock, paths, run_slots
from harness_cli.dispatch.backends import BackendName, backend, choose_backend, inline_runner
from harness_cli.dispatch.payload import (
    Payload,
    load_payload,
    mark_started,
    started_marker,
    write_payload_once,
)
from harness_cli.faults import crash_point
from harness_cli.logs import event

log = logging.getLogger("harness.dispatch")

WAITING = "waiting for a free workflow slot (run-queue.json)"


@dataclass
class Dispatched:
    backend: BackendName
    payload_file: Path
    started: bool
    exit_code: int | None = None
    """Only for ``inline``: the workflow's own exit code."""
    detail: str = ""
    duplicate: bool = False
    """The same event was dispatched before (same ``key``): nothing new was written or started."""


def dispatch(payload: Payload, *, backend: BackendName | None = None) -> Dispatched:
    """Write the payload, then start the workflow with the chosen backend. Idempotent by the
    payload's ``key``: a payload already written is not written again, and one already started
    is not started again (for ``record`` writing it is the dispatch)."""
    chosen = backend or choose_backend()
    payload_file, existed = write_payload_once(payload)
    crash_point("dispatch.payload")
    if existed and (chosen == "record" or started_marker(payload_file).exists()):
        event(log, "dispatch_duplicate", workflow=payload.workflow, case_id=payload.case_id,
              key=payload.key, payload=str(payload_file))  # fmt: skip
        return Dispatched(chosen, payload_file, started=False, detail="already", duplicate=True)
    if chosen in run_slots.CAPPED and not run_slots.admit(payload_file):
        return Dispatched(chosen, payload_file, started=False, detail=WAITING)
    started = _start(payload, payload_file, chosen)
    if started.started:
        mark_started(payload_file)
    crash_point("dispatch.started")
    return started


def start_waiting(backend: BackendName | None = None) -> list[str]:
    """Start the runs waiting for a workflow slot (``run_slots``), oldest first, as slots free."""
    chosen = backend or choose_backend()

    def start(path: Path) -> bool:
        started = _start(load_payload(path), path, chosen).started
        if started:
            mark_started(path)
        return started

    return run_slots.pump(start) if chosen in run_slots.CAPPED else []


def _start(payload: Payload, payload_file: Path, chosen: BackendName) -> Dispatched:
    event(log, "dispatch", workflow=payload.workflow, case_id=payload.case_id, backend=chosen,
          trigger=payload.trigger.kind, payload=str(payload_file))  # fmt: skip
    started = backend(chosen).start(payload, payload_file)
    return Dispatched(chosen, payload_file, started=started.started,
                      exit_code=started.exit_code, detail=started.detail)  # fmt: skip


def spawn(argv: list[str], *, backend: BackendName | None = None) -> int | None:
    """Start a command that is not tied to one case (e.g. ``gap-patterns``): inline runs it
    here and returns its code; record does nothing; the others detach it."""
    chosen = backend or choose_backend()
    event(log, "spawn", argv=argv, backend=chosen)
    if chosen == "record":
        return None
    if chosen == "inline":
        return inline_runner()(argv)
    logfile = paths.logs_dir() / "workflows" / f"{clock.stamp()}-{argv[0]}.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", "harness_cli", *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return None
