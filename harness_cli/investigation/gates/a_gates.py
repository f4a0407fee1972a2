"""A-gates: mechanical ceilings and blocks, “what Claude asserts”. A1-A6 judge the report;
A7 is the context pin applied to every prompt."""

from __future__ import annotations

import math
import re

from harness_cli.investigation.gates.base import GateInput, listing, violation
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.loop.report import CompletionReport
from harness_cli.loop.verdict import Violation

# A register entry the model marks settled ("RESOLVED: …", "[verified] …") is no longer pinned.
_SETTLED = re.compile(r"^\s*[\[(]?\s*(resolved|verified|confirmed|ruled out)\b", re.IGNORECASE)

PIN_HEADING = "## PINNED CONTEXT (A7: still unresolved, carried word for word)"


def a1_ceiling(report: CompletionReport, t: InvestigationThresholds) -> int:
    """1.0 − 0.08·open_questions − 0.05·unchecked_sources, in whole percent, never below 0.
    Rounded down (a cap errs low); the epsilon absorbs float noise such as 0.92 · 100."""
    cap = (
        1.0
        - t.open_question_penalty * len(report.open_questions)
        - t.unchecked_source_penalty * len(report.unchecked_sources)
    )
    return max(0, math.floor(cap * 100 + 1e-9))


def a1(inp: GateInput) -> Violation | None:
    r, t = inp.report, inp.thresholds
    cap = a1_ceiling(r, t)
    if r.confidence <= cap:
        return None
    return violation(
        "A1",
        f"confidence {r.confidence}% is above the A1 ceiling {cap}% (100 − "
        f"{t.open_question_penalty * 100:g}×{len(r.open_questions)} open questions − "
        f"{t.unchecked_source_penalty * 100:g}×{len(r.unchecked_sources)} unchecked sources): "
        f"clamped to {cap}%. Close questions or check sources to raise it.",
    )


def a2(inp: GateInput) -> Violation | None:
    r = inp.report
    if r.status != "COMPLETE":
        return None
    still_open = [
        p if isinstance(p, str) else f"{p.summary} ({p.status or 'no status'})"
        for p in r.adjacent_problems
        if isinstance(p, str) or p.is_open
    ]
    if not still_open:
        return None
    return violation(
        "A2",
        f"COMPLETE while adjacent problem(s) {listing(still_open)} stay open: resolve them, "
        "rule them out, or mark them out_of_scope/tracked with a reason.",
    )


def a3(inp: GateInput) -> Violation | None:
    if inp.report.assumption_register:
        return None
    return violation(
        "A3",
        "the assumption register is empty: every investigation rests on assumptions; list "
        "them so they can be checked.",
    )


def a4(inp: GateInput) -> Violation | None:
    r = inp.report
    if not (r.status == "COMPLETE" or r.actions) or any(a.maps_to_root_cause for a in r.actions):
        return None
    what = "no action is proposed" if not r.actions else "no proposed action maps to it"
    return violation(
        "A4",
        f"{what}: at least one action must address the root cause directly "
        "(maps_to_root_cause: true).",
    )


def a5(inp: GateInput) -> Violation | None:
    r = inp.report
    if r.status != "COMPLETE" or r.causal_chain_complete:
        return None
    return violation(
        "A5",
        "COMPLETE but causal_chain_complete is not true: a symptom-level finding with no "
        "traced root cause; trace the chain from trigger to symptom.",
    )


def a6(inp: GateInput) -> Violation | None:
    stray = [
        a.description or "(no description)"
        for a in inp.report.actions
        if a.destructive and not a.maps_to_root_cause
    ]
    if not stray:
        return None
    return violation(
        "A6",
        f"destructive action(s) {listing(stray)} do not address the root cause: drop them or "
        "show how each maps to it.",
    )


def unresolved(entries: list[str]) -> list[str]:
    return [e for e in entries if not _SETTLED.match(e)]


def pinned_block(report: CompletionReport | None) -> str:
    """A7: the unresolved contradictions and unverified assumptions of the current report,
    word for word, for the bottom of the next prompt ("" when there is nothing to pin)."""
    if report is None:
        return ""
    contradictions = unresolved(report.contradiction_register)
    assumptions = unresolved(report.assumption_register)
    if not contradictions and not assumptions:
        return ""
    lines = [PIN_HEADING, ""]
    if contradictions:
        lines += ["Unresolved contradictions:", *(f"- {c}" for c in contradictions), ""]
    if assumptions:
        lines += ["Unverified assumptions:", *(f"- {a}" for a in assumptions), ""]
    return "\n".join(lines)
