"""The one runner of every workflow: ``run(Run) -> Outcome``. Around the workflow's entry
(``workflows.table``): the pause gate, the per-(workflow, case) lock that makes a second
concurrent start exit 3, the work session, the run journal that makes a run killed at any point
resumable by the next one (:mod:`harness_cli.dispatch.journal`) with the repair of what a dead
run left, and the cost scope. A workflow command is parse → ``wiring`` → :func:`run` → emit."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_cli import clock, dryrun, run_slots
from harness_cli.config import load_config
from harness_cli.cost import meter
from harness_cli.cost.budgets import BudgetExceeded
from harness_cli.dispatch import journal
from harness_cli.dispatch.backends import choose_backend
from harness_cli.dispatch.dispatcher import start_waiting
from harness_cli.dispatch.payload import load_payload
from harness_cli.dispatch.run import Outcome, Run
from harness_cli.errors import HarnessError, InputError, PolicyRefused
from harness_cli.intake import pause
from harness_cli.outbox import notify
from harness_cli.outbox.doors import Doors
from harness_cli.sessions.lifecycle import finish, workflow_session
from harness_cli.state.locks import workflow_lock
from harness_cli.workflows import repair, table, unbegun
from harness_cli.workspace import registry
from harness_cli.workspace.case import validate_case_id

if TYPE_CHECKING:
    from harness_cli.cost.budgets import BudgetExceeded
    from harness_cli.cost.meter import Tally

log = logging.getLogger("harness.cost")


def resolve(
    workflow: str, case_arg: str | None, payload_file: str | None, *, doors: Doors,
    post: bool = True,
) -> Run:  # fmt: skip
    """The run a command names: its case from ``CASE`` or ``--payload FILE`` (both: they
    must agree)."""
    payload = load_payload(Path(payload_file)) if payload_file else None
    if payload is not None and payload.workflow != workflow:
        raise InputError(
            f"{payload_file} is a {payload.workflow} payload, not {workflow}",
            hint=f"run `harness {payload.workflow} --payload {payload_file}`",
        )
    case_id = case_arg or (payload.case_id if payload else None)
    if not case_id:
        raise InputError(
            f"{workflow} needs a CASE or --payload FILE", hint=f"e.g. harness {workflow} AAA-123"
        )
    if payload is not None and case_arg and case_arg != payload.case_id:
        raise InputError(f"CASE {case_arg} does not match the payload's case {payload.case_id}")
    return Run(
        workflow, validate_case_id(case_id), payload, str(Path(payload_file).absolute())
        if payload_file else "", post=post, doors=doors,
    )  # fmt: skip


def run(
    inv: Run,
    *,
    shown: AbstractContextManager[Any] | None = None,
    sync: bool = True,
    write_outcome: bool = True,
    commit: bool = True,
) -> Outcome:
    """Run the workflow's entry under :func:`running`; its summary goes into the work
    session's outcome report. ``shown``: the edge's live progress display, around the entry
    only (the lock and the session speak for themselves)."""
    with running(inv, sync=sync, write_outcome=write_outcome, commit=commit):
        with shown or nullcontext():
            outcome = table.entry(inv.workflow)(inv)
        if outcome.summary:
            finish(outcome.summary, failed=outcome.failed)
    return outcome


@contextmanager
def running(
    inv: Run, *, sync: bool = True, write_outcome: bool = True, commit: bool = True
) -> Iterator[Run]:
    """The per-(workflow, case) lock (exit 3), and the pause gate once more at start: a payload
    dispatched by someone else's activity just before a pause must not run during it. Then the
    work session (``harness_cli.sessions``): the preflight gate before anything is cloned
    (deny: exit 4 naming the holder; warn: parked as waiting_for_approval), its heartbeat, and
    at the end its outcome report (``write_outcome``: False for a dry run) and release. Inside
    it the cost scope (``metered``); ``sync=False`` (``investigate --no-post``): the run's
    cost lands in case.json uncommitted, like everything else the run wrote."""
    if inv.payload is not None:
        kind = inv.payload.trigger.kind
        # Held work is replayed when the pause ends, as a new payload (this one has started).
        again = inv.payload.model_copy(
            update={"key": f"{inv.payload.key or uuid.uuid4().hex}|held"}
        )
        if not pause.allow(
            kind,
            case_id=inv.case_id,
            detail=f"{inv.workflow} ({kind})",
            payload=again.model_dump(mode="json", exclude={"created_at"}),
        ):
            unbegun.settle(inv.payload_file, "held back by a pause")
            run_slots.forget(inv.payload_file)  # its place in the queue goes to the next one
            raise PolicyRefused(
                f"{inv.workflow} on {inv.case_id} was triggered by {kind} and the harness is "
                "paused",
                hint="held back: it runs by itself once the pause ends (`harness status` "
                "lists it until then)",
            )

    slotted = run_slots.claim(inv.payload_file)  # a dispatched run: one of the machine's slots
    try:
        with (
            workflow_lock(inv.workflow, inv.case_id),
            workflow_session(
                inv.workflow, inv.case_id, inv.payload, doors=inv.doors, write_outcome=write_outcome
            ),  # fmt: skip
            _journaled(inv, commit=commit),
            metered(inv, sync=sync),
        ):
            yield inv
    except PolicyRefused:
        # Refused on purpose (the preflight gate, a budget…): not a run that never began, so
        # no cycle dispatches it again (obligations.unbegun).

        unbegun.settle(inv.payload_file, "refused")
        raise
    finally:
        if slotted and run_slots.release() and run_slots.waiting():
            _start_waiting()


def _start_waiting() -> None:
    """The slot this run freed goes to the oldest waiting run (the next poll-slack would do it
    otherwise, a minute later)."""

    try:
        start_waiting(choose_backend(load_config().harness.dispatch))
    except HarnessError as exc:
        log.warning("could not start the next waiting run: %s", exc.line())


@contextmanager
def metered(inv: Run, *, sync: bool = True) -> Iterator[None]:
    """The cost scope of one workflow run: every model call inside is recorded under this
    case, project, workflow and run; at the end the run's spend is added to case.json; a
    budget that ended the run gets its one DM here (the investigation ends with its own
    ``exit=budget`` post instead and does not raise)."""

    run = f"{inv.workflow}-{inv.case_id}-{clock.stamp()}-{os.getpid()}"
    with meter.scope(case=inv.case_id, project=_project(inv.case_id), workflow=inv.workflow,
                     run=run):  # fmt: skip
        try:
            yield
        except BudgetExceeded as exc:
            _tell_budget(inv, exc)
            raise
        finally:
            _add_to_case(inv, meter.run_tally(run), sync=sync)


def _project(case_id: str) -> str | None:
    try:
        return registry.load_case(case_id).project
    except HarnessError:
        return None


def _add_to_case(inv: Run, spent: Tally, *, sync: bool = True) -> None:
    """case.json's running total (and per workflow): what ``case show`` and the case budget
    read. Nothing spent, nothing written."""
    if not spent.calls:
        return

    try:
        cfg = load_config()
        with registry.update_case(inv.case_id, cfg.harness.thresholds,
                                  f"{inv.workflow} cost ${spent.usd:.4f}",
                                  sync_now=sync and dryrun.ACTIVE is None) as case:  # fmt: skip
            case.cost = add_spend(case.cost, inv.workflow, spent)
    except HarnessError as exc:  # the calls are in the cost log all the same
        log.warning("could not add the run's cost to case %s: %s", inv.case_id, exc.line())


def add_spend(cost: dict[str, Any], workflow: str, spent: Tally) -> dict[str, Any]:
    def plus(into: dict[str, Any]) -> dict[str, Any]:
        out = dict(into)
        for key in ("calls", "input", "output", "cache_write", "cache_read"):
            out[key] = int(out.get(key, 0)) + getattr(spent, key)
        out["tokens"] = out["input"] + out["output"] + out["cache_write"] + out["cache_read"]
        out["usd"] = round(float(out.get("usd", 0.0)) + spent.usd, 6)
        out["runs"] = int(out.get("runs", 0)) + 1
        return out

    total = plus({k: v for k, v in cost.items() if k != "by_workflow"})
    per = dict(cost.get("by_workflow") or {})
    per[workflow] = plus(per.get(workflow) or {})
    return {**total, "by_workflow": per}


def _tell_budget(inv: Run, exc: BudgetExceeded) -> None:
    if dryrun.ACTIVE is not None:
        return
    try:
        cfg = load_config()
        notify.budget_reached(
            inv.doors.out, cfg, case_id=inv.case_id,
            text=f"{inv.workflow} on {inv.case_id} stopped: {exc.message}. {exc.hint}.",
        )  # fmt: skip
    except HarnessError as err:  # the exit code and the log still say it
        log.warning("could not DM the budget stop of %s: %s", inv.case_id, err.line())


@contextmanager
def _journaled(inv: Run, *, commit: bool) -> Iterator[None]:
    """Record the run (or resume the one a kill left), repair what a dead run left on the case,
    and commit what this run wrote — whatever way it ends. ``commit=False``: a dry run."""

    unbegun.refuse_if_adopted(inv.payload, inv.payload_file)
    cfg = load_config()
    args = {**(inv.payload.args if inv.payload else {}), **inv.args}
    with journal.running(
        inv.workflow, inv.case_id, payload=inv.payload, payload_file=inv.payload_file, args=args
    ):
        repair.before_run(cfg, inv.case_id, inv.doors, workflow=inv.workflow, commit=commit)
        try:
            yield
        finally:
            if commit:
                repair.after_run(cfg, inv.case_id, workflow=inv.workflow)
