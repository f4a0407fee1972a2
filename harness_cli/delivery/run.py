"""The dev-agent workflow end to end: payload → services → the mode's pipeline → one message.

Whatever the mode, the run ends in exactly one message to the operator, in the case's thread
(the closing edit of the live status message) or, when the case has no thread, once at the top
of the self-DM — always starting with the case id (:mod:`outcome`). A task run that fails
hands the case back as ``failed`` with the way out in that message.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from harness_cli.config import load_config
from harness_cli.delivery import ci_fix, dev_agent, outcome, review
from harness_cli.delivery import work as work_mod
from harness_cli.delivery.ci_fix import report_failure
from harness_cli.dispatch import journal
from harness_cli.dispatch.run import Outcome, Run
from harness_cli.errors import HarnessError, InputError, PolicyRefused
from harness_cli.logs import event
from harness_cli.loop import outage
from harness_cli.loop.runs import ModelUnavailable
from harness_cli.ops import status_message
from harness_cli.outbox import notify
from harness_cli.outbox.doors import Doors
from harness_cli.state import files
from harness_cli.workspace import registry

log = logging.getLogger("harness.dev_agent")

MODES = ("task", "address_review", "fix_ci")
RUNNABLE = {
    "task": ("approved", "in_progress", "failed", "escalated"),
    "fix_ci": ("mr_open", "in_progress", "escalated"),
    "address_review": ("mr_open", "in_progress", "escalated"),
}
"""Statuses from which each mode may start: a late dispatch never tramples a closed case."""
STATUS_CHARS = 1500
"""The closing edit carries the whole outcome (the MR link, what failed, what changed)."""


def dev_agent_workflow(run: Run) -> Outcome:
    """The dev-agent workflow's entry: the mode in ``run.args`` (task, address_review, fix_ci)
    to its one message; a failed task exits 1, and so does a run left waiting for the model."""
    mode = str(run.args.get("mode") or "")
    got = run_dev_agent(run.case_id, mode, run.args, run.doors, post=run.post)
    # the summary holds the harness's own facts only: the run's message quotes third-party text
    sha = str(got.get("pushed_sha") or "")
    mr = got.get("mr") or {}
    mr_url = str(mr.get("web_url") or "")
    said = f"pushed {sha[:8]}" if sha else str(got.get("state") or "nothing pushed")
    failed = mode == "task" and got.get("state") == "failed"
    summary = f"dev-agent {mode}: {said}" + (f", MR {mr_url}" if mr_url else "")
    outcome = Outcome("dev-agent", data=got, failed=failed, summary=summary)
    if mr:
        state = "ready" if mr.get("ready") else "draft"
        outcome.changed.append(f"MR {mr_url} ({state})")
    pushed = "pushed" if got.get("pushed") else "nothing pushed"
    message = str(got.get("message") or f"{mode}: {got.get('state') or pushed}")
    if failed or got.get("waiting"):
        outcome.errors.append(message)  # the work failed: exit 1, and the case says so
        outcome.exit_code = 1
    else:
        outcome.messages.append(message)
    return outcome


def run_dev_agent(
    case_id: str, mode: str, args: dict[str, Any], doors: Doors, *, post: bool = True
) -> dict[str, Any]:

    if mode not in MODES:
        raise InputError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    told = _told_by_a_killed_run()
    if told is not None:
        return told
    cfg = load_config()
    case = registry.load_case(case_id)
    opened = _opened_by_a_killed_run(case, mode)
    if case.status not in RUNNABLE[mode] and not _watched_mr(case_id, args) and not opened:
        raise PolicyRefused(
            f"case {case_id} is {case.status}; dev-agent {mode} does not run now",
            hint=f"`admin: retry {case_id}` runs it again once the case may"
            if case.status in ("approved", "in_progress", "failed", "escalated")
            else f"`admin: reopen {case_id}` puts it back for approval",
        )
    work = dev_agent.Work(
        cfg=cfg,
        case=case,
        case_dir=registry.case_dir(case_id),
        runtime=doors.runtime,
        gitlab=doors.forge,
        out=doors.out,
        args={**args, "mode": mode},
        quiet=not post,
    )
    runner = {
        "task": dev_agent.run_task,
        "fix_ci": ci_fix.run_fix_ci,
        "address_review": review.run_address_review,
    }[mode]
    work.status = (
        status_message.for_case(cfg, work.out, case_id, f"dev-agent {mode} {case_id}")
        if post
        else None
    )
    if mode == "fix_ci":
        _continue_fix_message(work)
    try:
        result = _told_mr(work, opened) if opened else runner(work)
    except ModelUnavailable as exc:
        if exc.kind != "outage":
            _failed(work, mode, exc)
            raise
        result = _wait_for_model(work, mode, args, exc, post=post)
        _remember_fix_message(work, mode)
        return result
    except BaseException as exc:
        _failed(work, mode, exc)
        _remember_fix_message(work, mode)
        raise
    if post:
        outage.recovered(case_id, work.cfg, work.out)  # it got through: it waits no more
    _tell(work, str(result.get("message") or _outcome(result)), ok=result.get("state") != "failed")
    _remember_fix_message(work, mode)
    _checkpoint_told(result)
    return result


def _wait_for_model(
    work: Any, mode: str, args: dict[str, Any], exc: ModelUnavailable, *, post: bool
) -> dict[str, Any]:
    """The model service stayed down past the run's retries: the case keeps its status (never
    ``failed``), poll-slack runs this mode again once the outage is over (``loop.outage``), and
    the operator hears of the outage once, not of each case."""

    why = outage.plain(exc.detail)
    if work.status is not None:  # first: the next try goes on editing this message
        work.status.waiting(f"the model API is {why}; tried again by itself")
    if post:
        outage.wait(work.cfg, work.out, case_id=work.case.id, workflow="dev-agent",
                    detail=exc.detail, args={**args, "mode": mode},
                    status_ts=work.status.ts if work.status is not None else None)  # fmt: skip
    return {
        "mode": mode,
        "state": "waiting",
        "waiting": True,
        "pushed": False,
        "message": f"{work.case.id}: dev-agent {mode} waits: the model API is {why}; it is "
        "tried again by the next cycles",
    }


def _continue_fix_message(work: Any) -> None:
    """#34 item 13: the second and third CI fix attempts of one red streak edit the first
    attempt's message in place (it says which attempt) — one message per MR, not a post per
    attempt; the escalation after the last one is the streak's only other message."""

    entry = files.monitored_mrs().read().mrs.get(str(work.args.get("mr") or ""))
    if work.status is None or entry is None or entry.fix_ci_attempts < 1:
        return
    work.status.title += f" (attempt {entry.fix_ci_attempts})"
    if entry.fix_ci_attempts > 1 and entry.fix_status_ts:
        work.status.ts = entry.fix_status_ts


def _remember_fix_message(work: Any, mode: str) -> None:
    key = str(work.args.get("mr") or "")
    if mode != "fix_ci" or work.status is None or not work.status.ts or not key:
        return
    with files.monitored_mrs().update() as state:
        entry = state.mrs.get(key)
        if entry is not None:
            entry.fix_status_ts = str(work.status.ts)


def _told_by_a_killed_run() -> dict[str, Any] | None:
    """#17 p8: the killed run this one resumes had finished and told the operator (it died in
    the workspace sync after): nothing is redone — before, a resumed fix_ci ran the fix again
    and posted a second "Done"."""

    run = journal.current()
    saved = run.recall("told") if run is not None and run.resumed else None
    return {**saved, "resumed": True} if isinstance(saved, dict) else None


def _checkpoint_told(result: dict[str, Any]) -> None:
    run = journal.current()
    if run is not None:
        run.checkpoint("told", json.loads(json.dumps(result, default=str)))


def _opened_by_a_killed_run(case: Any, mode: str) -> dict[str, Any] | None:
    """#17 p8: this task run resumes one killed after it opened the MR (the case is
    ``mr_open``): what is left is telling the operator — not a refusal, not a second MR."""

    run = journal.current()
    if mode != "task" or case.status != "mr_open" or run is None or not run.resumed:
        return None
    found = [m for m in case.mrs if m.state == "opened"]
    return {"web_url": found[-1].web_url, "iid": found[-1].iid} if found else None


def _told_mr(work: Any, mr: dict[str, Any]) -> dict[str, Any]:
    if work.status is not None:
        work.status.start()  # the killed run's placeholder (same scope): edited to its end
    return {
        "mode": "task",
        "state": "mr_open",
        "mr": mr,
        "pushed": True,
        "resumed": True,
        "message": f"{work.case.id}: MR {mr['web_url']} is open (the run that opened it was "
        "interrupted; nothing was redone)",
    }


def _failed(work: Any, mode: str, exc: BaseException) -> None:
    reason = status_message.reason(exc)
    if mode == "fix_ci" and isinstance(exc, HarnessError):
        try:
            report_failure(work, reason)
        except HarnessError as lost:
            event(log, "fix_result_lost", logging.WARNING, case_id=work.case.id, error=str(lost))
    if mode == "task" and isinstance(exc, HarnessError):
        try:
            work_mod.move_case(work, "failed", f"dev-agent task failed: {reason}")
        except HarnessError as moving:  # the run's own failure is what the operator hears
            event(log, "case_not_moved", logging.WARNING, case_id=work.case.id, error=str(moving))
        reason += ". " + outcome.way_out(work.case.id)
    if work.status is not None:
        work.status.failed(reason, limit=STATUS_CHARS)
    elif not work.quiet and isinstance(exc, HarnessError):
        _post(work, f"{work.case.id}: dev-agent {mode} failed: {reason}")


def _tell(work: Any, text: str, *, ok: bool = True) -> None:
    if work.status is not None and not ok:  # a run that delivered nothing is no "Done" (#34)
        work.status.failed(text, limit=STATUS_CHARS)
    elif work.status is not None:
        work.status.done(text, limit=STATUS_CHARS)
    elif not work.quiet:
        _post(work, text)


def _post(work: Any, text: str) -> None:
    try:
        notify.dm(work.out, work.cfg, "dev_agent_outcome", text, case_id=work.case.id)
    except HarnessError as exc:  # the run's result stands; the log says the DM was lost
        event(log, "outcome_dm_failed", logging.WARNING, case_id=work.case.id, error=exc.line())


def _outcome(result: dict[str, Any]) -> str:
    if result.get("mr"):
        return f"MR {result['mr'].get('web_url', '')}"
    if result.get("changed") is False:
        return "nothing changed, nothing pushed"
    return "pushed" if result.get("pushed") else "not pushed"


def _watched_mr(case_id: str, args: dict[str, Any]) -> bool:
    """An MR the harness still monitors for this case may be repaired whatever the ticket's
    own status — e.g. finalize's improvement MR against the harness repo (pr-ci-fixer), whose
    case was closed long before."""

    entry = files.monitored_mrs().read().mrs.get(str(args.get("mr", "")))
    return entry is not None and entry.case_id == case_id and entry.state == "opened"
