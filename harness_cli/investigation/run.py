"""The investigate and review workflows end to end: case → runtime → loop → publish.

``post=False`` is the dry run: the case folder is written (iterations, ANALYSIS.md, TASK.md,
case.json) so the operator can read what the investigation concluded, and nothing leaves the
machine — no Slack post or status message, no commit, no push.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_cli import clock, paths
from harness_cli.agents.factory import require_credentials
from harness_cli.config import Config, load_config
from harness_cli.dispatch import journal
from harness_cli.dispatch.run import Outcome, Run
from harness_cli.errors import EXIT_FAILED, InputError, PolicyRefused
from harness_cli.investigation import hand, precommit
from harness_cli.investigation.analysis import investigator_notes
from harness_cli.investigation.gates import evaluate
from harness_cli.investigation.loop import Loop, cache_prefix
from harness_cli.investigation.publish import PUBLISHED, publish, read_ticket, resume_published
from harness_cli.investigation.reviewer import review
from harness_cli.investigation.staging import Narrative
from harness_cli.loop import outage
from harness_cli.loop.prompts import render
from harness_cli.loop.report import extract_report
from harness_cli.loop.runs import CaseRunner, ModelUnavailable, evidence_paths
from harness_cli.ops import status_message
from harness_cli.outbox.doors import Doors
from harness_cli.state.store import atomic_write_json
from harness_cli.workspace import registry

STARTABLE = ("new", "investigating", "awaiting_approval", "failed", "escalated")


def investigate_workflow(run: Run) -> Outcome:
    """The investigate workflow's entry: the loop up to its exit, as the command reports it."""
    got = investigate_case(run.case_id, run.doors, post=run.post)
    line = str(got["exit_line"])
    outcome = Outcome("investigate", data=got, exit_code=got["exit_code"], summary=line,
                      failed=bool(got["exit_code"]), messages=[line])  # fmt: skip
    if got.get("owed"):
        outcome.messages.append(f"the result post is owed: {got['owed']}")
    if got["exit_code"]:
        outcome.errors.append(f"case {run.case_id}: {got['reason']}")
    suffix = "" if run.post else " (dry run: nothing posted, committed or pushed)"
    outcome.changed.append(f"case {run.case_id} → {got['status']}{suffix}")
    return outcome


def investigate_case(case_id: str, doors: Doors, *, post: bool = True) -> dict[str, Any]:
    cfg = load_config()
    case = registry.load_case(case_id)
    if case.status not in STARTABLE:
        raise PolicyRefused(
            f"case {case_id} is {case.status}; not investigating it again",
            hint="reopen it first if that is what you want",
        )

    run = journal.current()
    saved = run.recall(PUBLISHED) if run is not None and post else None
    if isinstance(saved, dict):
        return _resume(cfg, case_id, saved, doors)
    require_credentials(cfg)  # before the case moves: a refusal leaves it as it was
    t = cfg.harness.thresholds
    with registry.update_case(case_id, t, "investigating", sync_now=post) as fresh:
        fresh.move("investigating", by="investigate")
    folder = registry.case_dir(case_id)
    _archive_previous_run(folder)
    runtime = doors.runtime
    status = _live_status(cfg, case_id, doors) if post else None
    runner = CaseRunner(
        runtime,
        cfg,
        folder,
        cache_prefix=cache_prefix(cfg, case.project),
        status=status,
        evidence=evidence_paths(cfg, case.project),
    )
    committer = _committer(cfg, case_id) if post else None
    try:
        ticket = read_ticket(folder, cfg.harness.inputs.ticket_chars)
        result = Loop(cfg, case, folder, runner, ticket, committer=committer).run()
    except ModelUnavailable as exc:
        if exc.kind != "outage":
            raise  # pragma: no cover - the loop turns every other kind into exit=failed
        return _wait_for_model(cfg, case_id, exc, status, doors, post=post)
    except BaseException as exc:
        if status is not None:
            status.failed(status_message.reason(exc))
        with registry.update_case(case_id, t, "investigation failed", sync_now=post) as c:
            c.move("failed", by="investigate")
        raise
    out = doors.out if post else None
    # The exit line goes out once: the result is written over the live status message.
    edit_ts = status.handover() if status is not None else None
    done = publish(cfg, case_id, result, out, sync_now=post, edit_ts=edit_ts)
    if post:
        outage.recovered(case_id, cfg, out)  # it got through: it waits no more
    decision = result.decision
    actions = _hand(cfg, case_id, doors) if post else []
    return {
        "case_id": case_id,
        "exit_line": done.exit_line,
        "exit": decision.exit_reason,
        "status": done.status,
        "iterations": result.iterations,
        "posted_ts": done.posted_ts,
        "owed": done.owed,
        "confidence": result.confidence,
        "reason": decision.reason,
        "exit_code": decision.exit_code,
        "dry_run": not post,
        "actions": actions,
    }


def _wait_for_model(
    cfg: Config,
    case_id: str,
    exc: ModelUnavailable,
    status: status_message.StatusReporter | None,
    doors: Doors,
    *,
    post: bool,
) -> dict[str, Any]:
    """The model service stayed down past the call's retries: the case waits (still
    ``investigating``, never ``failed``), the next poll-slack cycles try it again, and the
    operator hears of the outage once (``loop.outage``), not of each case."""
    why = outage.plain(exc.detail)
    if status is not None:  # first: the next try goes on editing this message
        status.waiting(f"the model API is {why}; tried again by itself")
    if post:
        outage.wait(cfg, doors.out, case_id=case_id,
                    workflow="investigate", detail=exc.detail,
                    status_ts=status.ts if status is not None else None)  # fmt: skip
    line = f"waiting: the model API is {why}; case {case_id} is tried again by the next cycles"
    return {
        "case_id": case_id,
        "exit_line": line,
        "exit": "waiting",
        "status": registry.load_case(case_id).status,
        "iterations": 0,
        "posted_ts": None,
        "owed": None,
        "confidence": None,
        "reason": line,
        "exit_code": EXIT_FAILED,
        "dry_run": not post,
        "waiting": True,
    }


def _resume(cfg: Config, case_id: str, saved: dict[str, Any], doors: Doors) -> dict[str, Any]:
    """A run killed after it published (the case holds the result): post what it owes, close
    its live status message, and report what it concluded — no second investigation."""

    out = doors.out
    status = status_message.for_case(cfg, out, case_id, f"investigate {case_id}")
    done = resume_published(cfg, case_id, saved, out)
    if status is not None:
        status.start()  # the killed run's placeholder (same scope: same post), edited to its end
        status.done(f"{saved.get('exit')} after {saved.get('iterations')} iteration(s)")
    actions = _hand(cfg, case_id, doors)
    return {
        "case_id": case_id,
        "exit_line": done.exit_line,
        "exit": saved.get("exit"),
        "status": done.status,
        "iterations": saved.get("iterations"),
        "posted_ts": done.posted_ts,
        "owed": done.owed,
        "confidence": saved.get("confidence"),
        "reason": saved.get("reason"),
        "exit_code": saved.get("exit_code", 0),
        "dry_run": False,
        "resumed": True,
        "actions": actions,
    }


def _hand(cfg: Config, case_id: str, doors: Doors) -> list[str]:
    """The 95+ rule (#30): after the draft is out, the harness runs the actions that may run
    by themselves (a resumed run finds those its predecessor ran), and lists the drafts."""

    return hand.run_auto(cfg, case_id, doors.jira, doors.out)


def _committer(cfg: Config, case_id: str) -> Any:
    def commit(path: Path) -> str | None:
        return registry.sync(f"case {case_id}: hypothesis slate locked", cfg.harness.thresholds,
                             only=[path])  # fmt: skip

    return commit


def _live_status(cfg: Config, case_id: str, doors: Doors) -> status_message.StatusReporter | None:
    return status_message.for_case(cfg, doors.out, case_id, f"investigate {case_id}")


def _archive_previous_run(folder: Path) -> None:
    """A re-investigation keeps the earlier run: its iterations and reviews move under
    ``runs/<stamp>/`` instead of being overwritten from ``01.json`` on."""

    moved = [
        d for d in (folder / "iterations", folder / "review") if d.is_dir() and any(d.iterdir())
    ]
    if not moved:
        return
    target = folder / "runs" / clock.stamp()
    target.mkdir(parents=True, exist_ok=True)
    for path in moved:
        path.rename(target / path.name)


def review_workflow(run: Run) -> Outcome:
    """The review workflow's entry: both reviews and the gates' verdict."""
    got = review_case(run.case_id, run.doors)
    outcome = Outcome("review", data=got)
    outcome.messages.append(
        f"severity={got['review']['severity']}  "
        f"red_team_diverges={got['review']['red_team'].get('diverges')}  "
        f"decision={got['verdict']['decision']}"
    )
    if got.get("reason"):
        outcome.messages.append(str(got["reason"]))
    # A lock put back before the review: the operator should know the slate was tampered with.
    outcome.messages += [str(note) for note in got.get("lock", [])]
    return outcome


def review_case(case_id: str, doors: Doors) -> dict[str, Any]:
    """Both reviews of the latest report in ``iterations/``, each in its own staged folder,
    with the slate as locked (a changed lock file is put back first); saved under
    ``review/``."""

    cfg = load_config()
    registry.load_case(case_id)
    folder = registry.case_dir(case_id)
    outputs: list[tuple[int, str]] = []
    for path in sorted((folder / "iterations").glob("[0-9]*.json")):
        data = json.loads(path.read_text())
        outputs.append((int(data.get("iteration", len(outputs) + 1)), str(data.get("output", ""))))
    reports = [(text, found) for _, text in outputs if (found := extract_report(text)).report]
    if not reports:
        raise InputError(
            f"case {case_id} has no completion report to review",
            hint=f"run `harness investigate {case_id}` first",
        )
    found = reports[-1][1]
    report = found.report
    assert report is not None
    previous = reports[-2][1].report if len(reports) > 1 else None
    slate, lock_notes = precommit.enforce(
        folder, original=precommit.first_committed(paths.workspace())
    )
    slate_text = json.dumps(slate.model_dump() if slate else {}, indent=2)
    runner = CaseRunner(doors.runtime, cfg, folder)
    outcome = review(
        runner,
        render=lambda name, **v: render(cfg, name, **v),
        ticket=read_ticket(folder, cfg.harness.inputs.ticket_chars),
        narrative=Narrative(slate_text, tuple(outputs), investigator_notes(folder)),
        report=report,
        case_dir=folder,
    )
    verdict = evaluate(
        report, previous, outcome.verdict, cfg.harness.investigation,
        prose=found.prose, problems=found.problems,
    )  # fmt: skip
    atomic_write_json(
        folder / "review" / f"manual-{clock.stamp()}.json",
        {
            "review": outcome.raw,
            "verdict": verdict.to_json(),
            "reason": verdict.decision.reason if verdict.decision else "",
            "lock": lock_notes,
            "staged": outcome.staged,
            "calls": runner.drain(),
        },
    )
    return {
        "case_id": case_id,
        "review": outcome.raw,
        "verdict": verdict.to_json(),
        "reason": verdict.decision.reason if verdict.decision else "",
        "lock": lock_notes,
    }
