"""ANALYSIS.md: the harness's account of how the investigation ended, above the investigator's
own notes, which it keeps.

The investigator is told to write its notes into ANALYSIS.md. At the exit the harness writes
its part (exit line, sparkline, decision, root cause, registers, blockers, draft) between two
marks at the top and keeps everything the investigator wrote below them — a re-run replaces
the harness's part and never the notes. The same blockers list goes into the operator's DM.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from harness_cli.investigation.exits import trajectory
from harness_cli.loop.evidence import ToolUse, failed_call, sources_line
from harness_cli.loop.report import CompletionReport, UncheckedSource
from harness_cli.loop.verdict import Decision, Verdict

FILE = "ANALYSIS.md"
BEGIN = "<!-- harness: written at the investigation's exit; notes below the end mark are kept -->"
END = "<!-- harness: end -->"
NOTES_HEADING = "## Investigator's notes"


def split_notes(text: str) -> str:
    """What the investigator wrote: everything after the harness's part (or the whole file
    when the marks are gone — it was rewritten by the investigator)."""
    if BEGIN in text and END in text.split(BEGIN, 1)[1]:
        text = text.split(BEGIN, 1)[1].split(END, 1)[1]
    text = text.strip()
    if text.startswith(NOTES_HEADING):
        text = text[len(NOTES_HEADING) :].strip()
    return text


def investigator_notes(case_dir: Path) -> str:
    try:
        return split_notes((case_dir / FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return ""


def source_line(source: UncheckedSource | str, tools: Sequence[ToolUse] | None = None) -> str:
    """An unchecked source, and (given the run's tool calls) whether a failed call shows it
    unavailable."""
    if isinstance(source, str):
        line = source
    else:
        line = f"{source.name or '(unnamed)'}: {source.access_status or 'no access_status'}"
    if tools is None:
        return line
    failed = failed_call(source, tools)
    if failed is None:
        return f"{line} (unverified: no call to it failed in this run)"
    return f"{line} (a {failed.name} call failed: {' '.join(failed.error.split())[:100]})"


def blockers(report: CompletionReport | None, tools: Sequence[ToolUse]) -> list[str]:
    """Every register that can hold the investigation back: unchecked sources, adjacent
    problems with a blocker or still open, open questions, an untraced causal chain."""
    if report is None:
        return []
    out = [f"unchecked source {source_line(s, tools)}" for s in report.unchecked_sources]
    for p in report.adjacent_problems:
        if isinstance(p, str):
            out.append(f"adjacent problem: {p}")
        elif p.blocker.strip() or p.is_open:
            blocker = f" — blocker: {p.blocker.strip()}" if p.blocker.strip() else ""
            out.append(f"adjacent problem: {p.summary} ({p.status or 'no status'}){blocker}")
    out += [f"open question: {q}" for q in report.open_questions]
    if report.status == "COMPLETE" and not report.causal_chain_complete:
        out.append("the causal chain from trigger to symptom is not traced")
    return out


def analysis_md(
    case_id: str,
    line: str,
    decision: Decision,
    history: Sequence[Verdict],
    report: CompletionReport | None,
    tools: Sequence[ToolUse],
    notes: str,
    *,
    catalog: Sequence[str] = (),
) -> str:
    sources = sources_line(tools, catalog)
    parts = [
        BEGIN,
        f"# {case_id} — analysis",
        "",
        f"`{line}`",
        "",
        f"Confidence: {trajectory(history) or '(no readable report)'}",
        "",
        f"Decision: {decision.reason}",
    ]
    if sources:
        parts += ["", f"Sources queried: {sources.removeprefix('sources: ')}"]
    if decision.exit_reason != "complete":
        held = blockers(report, tools)
        if held:
            parts += ["", "## Blockers", "", *(f"- {b}" for b in held)]
    if report is not None:
        if report.root_cause:
            parts += ["", "## Root cause", "", report.root_cause.summary, ""]
            parts += [f"- [{e.kind}] {e.claim} ({e.source})" for e in report.root_cause.evidence]
        for title, items in (
            ("Open questions", report.open_questions),
            ("Contradictions", report.contradiction_register),
            ("Assumptions", report.assumption_register),
            ("Unchecked sources", [source_line(s, tools) for s in report.unchecked_sources]),
            ("Adjacent problems", [_problem(p) for p in report.adjacent_problems]),
        ):
            if items:
                parts += ["", f"## {title}", "", *(f"- {i}" for i in items)]
        if report.draft_response:
            parts += ["", "## Draft response", "", report.draft_response]
    parts += ["", END]
    if notes.strip():
        parts += ["", NOTES_HEADING, "", notes.strip()]
    return "\n".join(parts) + "\n"


def _problem(problem: object) -> str:
    if isinstance(problem, str):
        return problem
    summary = getattr(problem, "summary", "")
    status = getattr(problem, "status", "") or "no status"
    blocker = getattr(problem, "blocker", "")
    return f"{summary} ({status})" + (f" — blocker: {blocker}" if blocker else "")
