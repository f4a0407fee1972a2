"""After the loop: the exit line, ANALYSIS.md, TASK.md, case.json, and the one Slack post.

"All outbound communication passes through the draft_response field of the structured
completion report, which the harness posts only after it has validated the exit conditions."
Only a ``complete`` exit posts the draft; the others post the exit line and what holds the
investigation back (every register's blockers), or — for ``failed`` — the real cause and
what to do. The exit line goes out once: in that post (the status message closes without it).
A dry run (``out`` None, ``sync_now`` False) writes the case folder and nothing else: no post,
no commit, no push.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from harness_cli import clock
from harness_cli.approval import APPROVAL_HINT
from harness_cli.bounds import bound
from harness_cli.config import Config
from harness_cli.cost.meter import spend_line
from harness_cli.dispatch import journal
from harness_cli.investigation import hand
from harness_cli.investigation.analysis import FILE as ANALYSIS
from harness_cli.investigation.analysis import analysis_md, blockers, investigator_notes
from harness_cli.investigation.exits import exit_line, points
from harness_cli.investigation.loop import LoopResult
from harness_cli.investigation.rules import split_actions
from harness_cli.logs import event
from harness_cli.loop.evidence import sources_line
from harness_cli.loop.report import CompletionReport
from harness_cli.outbox.outbound import Outbound
from harness_cli.outbox.slack_door import Owed
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry
from harness_cli.workspace.case import ConfidencePoint
from harness_cli.workspace.jira_issue import ticket_context

log = logging.getLogger("harness.investigation")

STATUS_AFTER = {"complete": "awaiting_approval", "failed": "failed"}
"""The case status each exit leaves; any other exit: ``escalated`` (the operator decides)."""


@dataclass
class Published:
    exit_line: str
    status: str
    posted_ts: str | None
    owed: str = ""
    """Slack refused the post for now: it is recorded in the outbox and a later run posts it
    (the investigation's result is not lost with a 429 storm)."""


def publish(
    cfg: Config,
    case_id: str,
    result: LoopResult,
    out: Outbound | None,
    *,
    sync_now: bool = True,
    edit_ts: str | None = None,
) -> Published:
    """``edit_ts``: the run's live status message, which the result is written over (one
    message per outcome) instead of a post of its own."""
    decision = result.decision
    reason = decision.exit_reason or "timeout"
    # The sources the run queried go with the exit line (a failure's cause comes first).
    sources = sources_line(result.tools, result.catalog)
    note = "; ".join(n for n in (decision.exit_note, sources) if n) or None
    line = exit_line(reason, result.confidence, result.iterations, result.elapsed_seconds, note)
    event(log, "investigation_exit", case_id=case_id, line=line)
    folder = registry.case_dir(case_id)
    report = result.report
    notes = investigator_notes(folder)
    atomic_write_text(
        folder / ANALYSIS,
        analysis_md(
            case_id,
            line,
            decision,
            result.history,
            report,
            result.tools,
            notes,
            catalog=result.catalog,
        ),
    )
    completed = decision.action == "exit_complete"
    atomic_write_text(
        folder / "TASK.md", task_md(cfg, case_id, line, report, result.confidence, completed)
    )

    hand.plan(cfg, case_id, line, report, result.confidence, completed)  # what may run (#30)
    status = STATUS_AFTER.get(reason, "escalated")
    message = f"investigation {reason}"
    with registry.update_case(case_id, cfg.harness.thresholds, message, sync_now=sync_now) as case:
        case.exit = line
        case.confidence = [
            ConfidencePoint.model_validate(
                {
                    "iteration": p.iteration,
                    "confidence": p.confidence,
                    "at": clock.now(),
                    **({"review": True} if p.review else {}),
                }
            )
            for p in points(result.history)
        ]
        case.move(status, by="investigate", note=decision.reason)
    _remember(case_id, line, status, result)

    try:
        posted = _post(cfg, case_id, line, result, out, edit_ts) if out is not None else None
    except Owed as exc:
        event(log, "investigation_post_owed", logging.WARNING, case_id=case_id, error=exc.line())
        return Published(line, status, None, owed=exc.message)
    return Published(line, status, posted)


PUBLISHED = "published"
"""The run's checkpoint once the case holds the result: a run killed after it only owes the
post (:func:`resume_published`)."""


def _remember(case_id: str, line: str, status: str, result: LoopResult) -> None:
    run = journal.current()
    if run is None:
        return
    decision = result.decision
    run.checkpoint(
        PUBLISHED,
        {
            "exit_line": line,
            "status": status,
            "text": dm_text(case_id, line, result),
            "exit": decision.exit_reason,
            "iterations": result.iterations,
            "confidence": result.confidence,
            "reason": decision.reason,
            "exit_code": decision.exit_code,
        },
    )


def resume_published(
    cfg: Config, case_id: str, saved: dict[str, object], out: Outbound
) -> Published:
    """Finish a run killed after it published: the post it owes, in the same scope — so a post
    that did go out is found, not made twice."""

    thread = registry.case_thread(case_id)
    dm = cfg.harness.operator.self_dm_channel
    line, status = str(saved["exit_line"]), str(saved["status"])
    try:
        posted = out.post(dm, str(saved["text"]), thread_ts=thread.thread_ts if thread else None,
                          purpose="investigation_result")  # fmt: skip
    except Owed as exc:
        return Published(line, status, None, owed=exc.message)
    return Published(line, status, posted)


def task_md(
    cfg: Config,
    case_id: str,
    line: str,
    report: CompletionReport | None,
    confidence: int,
    completed: bool = True,
) -> str:
    """What to do. Actions may run by themselves only after a ``complete`` exit at 95+;
    after any other exit every action is the operator's to decide."""
    parts = [f"# {case_id} — what to do", "", f"Investigation: `{line}`", ""]
    if report is None or not report.actions:
        return "\n".join([*parts, "No action was proposed."]) + "\n"
    auto, drafts = split_actions(
        report.actions, confidence, cfg.harness.investigation, completed=completed
    )
    for title, actions in (
        ("May run by itself (confidence ≥ auto-run bar, non-destructive)", auto),
        ("For the operator to decide", drafts),
    ):
        if not actions:
            continue
        parts += [f"## {title}", ""]
        for a in actions:
            verify = a.verify_action
            check = (
                (
                    f" — verify: {verify.description}; expect {verify.expected_outcome}"
                    f" ({verify.timing})"
                )
                if verify
                else " — no verification given"
            )
            flags = " [destructive]" if a.destructive else ""
            n = next(i for i, b in enumerate(report.actions, 1) if b is a)
            how = f" (#{n})" if actions is auto else f" → `admin: run {case_id} {n}`"
            parts.append(f"- {a.description}{flags}{check}{how}")
        parts.append("")
    return "\n".join(parts) + "\n"


def dm_text(case_id: str, line: str, result: LoopResult) -> str:
    """The one post: the exit line, then the draft (complete), the cause and what to do
    (failed), or what holds the investigation back (every other exit)."""
    decision, report = result.decision, result.report
    reason = decision.exit_reason
    if reason == "complete" and report is not None and report.draft_response:
        return (
            f"`{line}`\nDraft response ({APPROVAL_HINT}, or `admin: task {case_id}`):\n"
            f"{report.draft_response}"
        )
    if reason == "failed":
        return "\n".join(
            [f"`{line}`", f"The investigation could not run: {decision.reason}",
             f"Nothing was concluded. The iterations so far are in case {case_id}."]
        )  # fmt: skip
    if reason == "budget":
        return "\n".join(
            [f"`{line}`", f"The investigation stopped at its budget: {decision.reason}",
             f"Every iteration so far is kept in case {case_id}; nothing was concluded."]
        )  # fmt: skip
    held = [f"• {b}" for b in blockers(report, result.tools)]
    if reason == "timeout" and decision.exit_note:  # a call cut at the wall clock
        held.append(
            f"Next: check the model service (`harness doctor`), then run "
            f"`harness investigate {case_id}` again; the iterations so far are kept."
        )
    return "\n".join(
        [f"`{line}`", "The investigation needs you before it can go on.",
         f"Why: {decision.reason}", *held]
    )  # fmt: skip


def _post(
    cfg: Config,
    case_id: str,
    line: str,
    result: LoopResult,
    out: Outbound,
    edit_ts: str | None = None,
) -> str | None:
    thread = registry.case_thread(case_id)  # either map: an `admin: task` case's is a task one

    dm = cfg.harness.operator.self_dm_channel
    text = dm_text(case_id, line, result)
    cost = spend_line(case_id)
    if edit_ts:
        out.update(dm, edit_ts, f"{text}\n{cost}" if cost else text, owed=True,
                   purpose="investigation_result")  # fmt: skip
        return edit_ts
    return out.post(
        dm,
        f"{text}\n{cost}" if cost else text,
        thread_ts=thread.thread_ts if thread else None,
        purpose="investigation_result",
    )


def read_ticket(case_dir: Path, limit: int | None = None) -> str:
    """The ticket's text for a prompt, cut to ``limit`` characters (``inputs.ticket_chars``)
    with a note; the whole text stays in message.json."""

    path = case_dir / "message.json"
    try:
        message = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "(message.json unreadable)"
    text = str(message.get("text", "")) if isinstance(message, dict) else str(message)

    text += ticket_context(case_dir)  # the Jira issue the case is keyed by (#30)
    if limit is None:
        return text
    return bound(text, limit, what="the ticket", where=str(path))
