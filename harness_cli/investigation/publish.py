"""After the loop: the exit line, ANALYSIS.md, TASK.md, case.json, and the one Slack post.

"All outbound communication passes through the draft_response field of the structured
completion report, which the harness posts only after it has validated the exit conditions."
Only a ``complete`` exit posts the draft; the others post the exit line and what blocks it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from harness_cli import clock
from harness_cli.config import Config
from harness_cli.investigation.loop import LoopResult
from harness_cli.investigation.report import CompletionReport
from harness_cli.investigation.rules import exit_line, split_actions, trajectory
from harness_cli.logs import event
from harness_cli.ops.outbound import Outbound
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry
from harness_cli.workspace.case import ConfidencePoint

log = logging.getLogger("harness.investigation")


@dataclass
class Published:
    exit_line: str
    status: str
    posted_ts: str | None


def publish(cfg: Config, case_id: str, result: LoopResult, out: Outbound | None) -> Published:
    decision = result.decision
    reason = decision.exit_reason or "timeout"
    last = result.history[-1]
    line = exit_line(
        reason, last.confidence, result.iterations, result.elapsed_seconds, decision.exit_note
    )
    event(log, "investigation_exit", case_id=case_id, line=line)
    folder = registry.case_dir(case_id)
    report = result.report
    atomic_write_text(folder / "ANALYSIS.md", analysis_md(case_id, line, result, report))
    atomic_write_text(folder / "TASK.md", task_md(cfg, case_id, line, report, last.confidence))
    status = "awaiting_approval" if reason == "complete" else "escalated"
    with registry.update_case(case_id, cfg.harness.thresholds, f"investigation {reason}") as case:
        case.exit = line
        case.confidence = [
            ConfidencePoint(iteration=i, confidence=v.confidence, at=clock.now())
            for i, v in enumerate(result.history, 1)
            if v.review is None and v.report_ok
        ]
        case.move(status, by="investigate", note=decision.reason)
    posted = _post(cfg, case_id, line, reason, report, out) if out is not None else None
    return Published(line, status, posted)


def analysis_md(
    case_id: str, line: str, result: LoopResult, report: CompletionReport | None
) -> str:
    parts = [
        f"# {case_id} — analysis",
        "",
        f"`{line}`",
        "",
        f"Confidence: {trajectory(result.history)}",
        "",
        f"Decision: {result.decision.reason}",
    ]
    if report is not None:
        if report.root_cause:
            parts += ["", "## Root cause", "", report.root_cause.summary, ""]
            parts += [f"- [{e.kind}] {e.claim} ({e.source})" for e in report.root_cause.evidence]
        for title, items in (
            ("Open questions", report.open_questions),
            ("Contradictions", report.contradiction_register),
            ("Assumptions", report.assumption_register),
            ("Unchecked sources", [_source(s) for s in report.unchecked_sources]),
        ):
            if items:
                parts += ["", f"## {title}", "", *(f"- {i}" for i in items)]
        if report.draft_response:
            parts += ["", "## Draft response", "", report.draft_response]
    return "\n".join(parts) + "\n"


def task_md(
    cfg: Config, case_id: str, line: str, report: CompletionReport | None, confidence: int
) -> str:
    parts = [f"# {case_id} — what to do", "", f"Investigation: `{line}`", ""]
    if report is None or not report.actions:
        return "\n".join([*parts, "No action was proposed."]) + "\n"
    auto, drafts = split_actions(report.actions, confidence, cfg.harness.investigation)
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
            parts.append(f"- {a.description}{flags}{check}")
        parts.append("")
    return "\n".join(parts) + "\n"


def _post(
    cfg: Config,
    case_id: str,
    line: str,
    reason: str,
    report: CompletionReport | None,
    out: Outbound,
) -> str | None:
    thread = registry.case_thread(case_id)  # either map: an `admin: task` case's is a task one
    dm = cfg.harness.operator.self_dm_channel
    if reason == "complete" and report is not None and report.draft_response:
        body = (
            f"`{line}`\nDraft response (reply to approve, or `admin: task {case_id}`):\n"
            f"{report.draft_response}"
        )
    else:
        blockers = [f"• {_source(s)}" for s in (report.unchecked_sources if report else [])]
        body = "\n".join(
            [f"`{line}`", "The investigation needs you before it can go on.", *blockers]
        )
    return out.post(dm, body, thread_ts=thread.thread_ts if thread else None)


def _source(source: object) -> str:
    """An unchecked source; a model may give a bare string (G3 flags it, we still show it)."""
    name = getattr(source, "name", None)
    return f"{name}: {getattr(source, 'access_status', '')}" if name else str(source)


def read_ticket(case_dir: Path) -> str:
    import json

    try:
        message = json.loads((case_dir / "message.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "(message.json unreadable)"
    return str(message.get("text", "")) if isinstance(message, dict) else str(message)
