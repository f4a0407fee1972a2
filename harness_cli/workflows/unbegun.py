"""A dispatched run that never began is adopted: its payload is on disk, the cycle that wrote
it counts the work as handed over (mr-monitor's ``last_fix_sha`` / ``handled_notes``, the
dedup of poll-slack), but the process died before its run record was written (a SIGKILL at
start-up, an OOM, a reboot, a lost transient unit) — so :func:`adopt.stranded_runs`, which
reads run records, never sees it.

The rule, in this one place, run by every poll-slack and mr-monitor cycle
(:func:`harness_cli.workflows.cycle.tend`): a payload file

- written more than ``payload_start_grace_seconds`` ago (and less than ``ADOPT_WITHIN_S``),
- with no run record under the identity its run would have (:func:`journal.identity_of`),
- not settled (held back by a pause, which replays it as a new payload, or refused on
  purpose by the preflight gate: exit 4),
- whose workflow is not running on its case right now (the per-(workflow, case) lock is free),

is dispatched again as a resume of that identity, ONCE: an ``.adopted`` marker is created
(atomically, under the workflow lock) before the dispatch, and a late start of the original
payload finds the marker and stands down (:func:`refuse_if_adopted`). If the adopted run does
not begin either, the operator is told once instead of dispatching a third time."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness_cli import paths, run_slots
from harness_cli.config import Config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch import journal
from harness_cli.dispatch.backends import BackendName
from harness_cli.dispatch.payload import Payload, Trigger, load_payload
from harness_cli.errors import HarnessError, LockHeld
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.state.locks import hold
from harness_cli.state.store import atomic_create_bytes, atomic_write_text
from harness_cli.workflows.adopt import say_redispatched

if TYPE_CHECKING:
    from harness_cli.outbox.outbound import Outbound

log = logging.getLogger("harness.runs")

ADOPT_WITHIN_S = 86400.0
"""Payloads older than a day are history, not owed work (a run's record is kept for
``outbox_keep_done_days``, so a payload this young that began still has one)."""


def _marker(payload_file: Path, kind: str) -> Path:
    return payload_file.parent / f".{kind}" / payload_file.name


def settle(payload_file: str, why: str) -> None:
    """The payload's run will never be needed (e.g. held back by a pause, which replays it as a
    new payload): adoption leaves it alone."""
    if payload_file:
        atomic_write_text(_marker(Path(payload_file), "settled"), why + "\n")


def refuse_if_adopted(payload: Payload | None, payload_file: str) -> None:
    """A payload's late start after a cycle adopted it stands down (exit 3): the adopted resume
    does (or did) its work. Called with the workflow lock held."""
    if payload is None or not payload_file or (payload.args or {}).get("resume_run"):
        return
    if _marker(Path(payload_file), "adopted").exists():
        raise LockHeld(
            f"{payload.workflow} on {payload.case_id}: {payload_file} never began in time and "
            "was dispatched again as a resume",
            hint="nothing to do: the resumed run does this work",
        )


def identity(payload: Payload, payload_file: Path) -> str:
    """The identity its run records itself under (journal.running's rule)."""
    return journal.identity_of(payload.workflow, payload, None) or f"payload:{payload_file}"


def began(payload: Payload, payload_file: Path) -> bool:
    ident = identity(payload, payload_file)
    return journal.record_path(payload.workflow, payload.case_id, ident).exists()


def unbegun_payloads(cfg: Config, out: Outbound | None, *, backend: BackendName) -> list[str]:
    """Adopt every payload whose run never began; returns lines for the cycle's result."""
    grace = cfg.harness.obligations.payload_start_grace_seconds
    lines: list[str] = []
    now = time.time()
    for path in sorted(paths.payloads_dir().glob("*.json")):
        try:
            age = now - path.stat().st_mtime
        except OSError:
            continue
        if age < grace or age > ADOPT_WITHIN_S or _marker(path, "settled").exists():
            continue
        if run_slots.waiting(path):
            continue  # waiting for a workflow slot: its turn comes (run_slots.pump)
        try:
            payload = load_payload(path)
        except HarnessError:
            continue  # not a payload any run could start: nothing to adopt
        path = path.absolute()
        if (payload.args or {}).get("resume_run") or began(payload, path):
            continue  # a resume is the journal's to re-dispatch (adopt.stranded_runs)
        adopted = _marker(path, "adopted")
        try:
            if adopted.exists():
                lines += _tell_if_still_unbegun(cfg, out, path, payload, adopted, grace, now)
            else:
                adopted_now = _adopt(backend, path, payload, adopted)
                lines += adopted_now
                if adopted_now:
                    say_redispatched(cfg, out, payload.case_id, payload.workflow,
                                     "was dispatched but never began")  # fmt: skip
        except LockHeld:
            continue  # its workflow runs on the case right now
        except HarnessError as exc:
            event(log, "unbegun_payload_failed", logging.WARNING, payload=str(path),
                  error=exc.line())  # fmt: skip
    return lines


def _adopt(backend: BackendName, path: Path, payload: Payload, adopted: Path) -> list[str]:
    ident = identity(payload, path)
    with hold(f"{payload.workflow}-{payload.case_id}", timeout=0):
        if began(payload, path):
            return []  # it began between the look and the lock
        data = json.dumps({"adopted_at": time.time(), "identity": ident, "told": False})
        if not atomic_create_bytes(adopted, (data + "\n").encode()):
            return []  # another cycle adopted it first
    again = payload.model_copy(
        update={
            "trigger": Trigger(kind="resume", user="harness", ts=payload.trigger.ts),
            "args": {**payload.args, "resume_run": ident},
            "key": f"adopted|{ident}",
            "created_at": None,
        }
    )
    started = dispatch.dispatch(again, backend=backend)
    event(log, "unbegun_payload_adopted", workflow=payload.workflow, case_id=payload.case_id,
          payload=str(path), resume=str(started.payload_file))  # fmt: skip
    return [f"resumed {payload.workflow} {payload.case_id} (its run never began)"]


def _tell_if_still_unbegun(
    cfg: Config,
    out: Outbound | None,
    path: Path,
    payload: Payload,
    adopted: Path,
    grace: float,
    now: float,
) -> list[str]:
    """The adopted resume did not begin either (its record would exist): say so once."""
    try:
        mark = json.loads(adopted.read_text())
    except (OSError, ValueError):
        mark = {"adopted_at": 0.0, "told": False}
    if mark.get("told") or now - float(mark.get("adopted_at", 0.0)) < grace:
        return []
    resumed_as = str(mark.get("identity", ""))
    if journal.record_path(payload.workflow, payload.case_id, resumed_as).exists():
        return []
    if out is None:
        return []

    text = (
        f"{payload.case_id}: `{payload.workflow}` ({payload.trigger.kind}) was dispatched twice "
        f"and never started ({path.name}). Check `harness doctor` and the dispatch backend, "
        f"then run `harness {payload.workflow} --payload {path}`."
    )
    notify.dm(out, cfg, "run_never_began", text, case_id=payload.case_id)
    atomic_write_text(adopted, json.dumps({**mark, "told": True}) + "\n")
    event(log, "unbegun_payload_given_up", logging.ERROR, workflow=payload.workflow,
          case_id=payload.case_id, payload=str(path))  # fmt: skip
    return [f"gave up on {payload.workflow} {payload.case_id}: never began; the operator was told"]
