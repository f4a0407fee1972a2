"""Named crash points: the fault-injection seam for "safe to kill at any point" (CONTRACT §1).

Code that writes state calls ``crash_point("intake.claimed")`` right after each durable step.
Unarmed (the normal case) that is one dict lookup. Armed through the environment, the process
SIGKILLs itself there — no ``finally``, no atexit, no flush: what cron timeouts, the OOM killer
and reboots do::

    HARNESS_CRASH_AT=case.json            # die the first time case.json is written
    HARNESS_CRASH_AT=dispatch.payload:3   # die at the third payload write
    HARNESS_CRASH_AT=case.dir,intake.done:2

The test harness (tests/intake/test_crash_*.py, bench/bench_crash.py) arms one point at a time
and then checks that one clean run repairs everything. Later layers (resumable workflows, the
outbox) add their own points the same way; ``POINTS`` lists every point with the step it follows,
so a campaign can walk them all.
"""

from __future__ import annotations

import os
import signal

ENV = "HARNESS_CRASH_AT"
HANG_ENV = "HARNESS_HANG_AT"
"""Same spec, but the process stops there for good instead of dying (a job stuck on a call
that never returns: what only a timeout or a cancel ends)."""

POINTS: dict[str, str] = {
    "intake.claimed": "a batch of messages recorded as seen (leased) in socket-dedup",
    "case.dir": "a new case's folder created",
    "case.message": "a new case's message.json written",
    "case.json": "a new case's case.json written",
    "intake.thread_map": "the ticket's thread registered in the thread map",
    "intake.case_thread_posted": "the case thread posted in the self-DM, not yet recorded",
    "intake.case_thread": "the case thread recorded (thread map and case.json)",
    "dispatch.payload": "a dispatch payload written, the workflow not started",
    "dispatch.started": "a workflow started by its backend, not yet marked started",
    "intake.rate_decided": "a ticket's intake-rate decision recorded (open, or fold into a case)",
    "intake.folded": "a ticket attached to its flood case, the case thread not yet sure",
    "intake.handled": "a message's effects all exist, recorded as handled",
    "workspace.committed": "the workspace committed, not yet pushed",
    "workspace.pushed": "the workspace pushed",
    "intake.done": "about to record a batch of messages as done",
    "session.opened": "a workflow's session opened (reservations on the remote), no work begun",
    "outbox.attempting": "an owed write recorded as in flight, not yet sent",
    "outbox.landed": "an owed write confirmed by the service, not yet recorded as done",
    "outbox.note_attempting": "an owed GitLab note or reply recorded as in flight, not yet sent",
    "outbox.note_landed": "an owed GitLab note or reply confirmed, not yet recorded as done",
    "outbox.jira_attempting": "an owed Jira comment/transition/assignment in flight, not sent",
    "outbox.jira_landed": "an owed Jira write confirmed by Jira, not yet recorded as done",
}
"""Every crash point, with the durable step it follows. Workflow runs add, per workflow,
``run.<workflow>.started`` (the run recorded in its journal) and ``run.<workflow>.<checkpoint>``
(a durable checkpoint passed: :mod:`harness_cli.dispatch.journal`)."""

_armed: dict[str, int] | None = None
_hits: dict[str, int] = {}


def _parse(spec: str) -> dict[str, int]:
    armed: dict[str, int] = {}
    for part in spec.split(","):
        name, _, nth = part.strip().partition(":")
        if name:
            armed[name] = int(nth) if nth.strip().isdigit() and int(nth) > 0 else 1
    return armed


def crash_point(name: str) -> None:
    """SIGKILL this process here if ``HARNESS_CRASH_AT`` names ``name`` (at its nth hit); hang
    here for good if ``HARNESS_HANG_AT`` does."""
    global _armed
    if _armed is None:
        _armed = _parse(os.environ.get(ENV, ""))
        _armed.update({f"hang:{k}": v for k, v in _parse(os.environ.get(HANG_ENV, "")).items()})
    if not _armed or (name not in _armed and f"hang:{name}" not in _armed):
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == _armed.get(name):
        os.kill(os.getpid(), signal.SIGKILL)
    if _hits[name] == _armed.get(f"hang:{name}"):
        while True:
            signal.pause()


def reset() -> None:
    """Forget the parsed spec and the hit counts (tests that change the variable in-process)."""
    global _armed
    _armed = None
    _hits.clear()
