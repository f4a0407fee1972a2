"""The quality gates: 19 pure functions that refuse to let an investigation advance unless its
evidence and its stated confidence agree. ``table.py`` documents every code; one module per
family holds the functions; ``evaluate`` runs them all and asks ``rules.next_step`` what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from harness_cli import components
from harness_cli.investigation import rules
from harness_cli.investigation.gates.a_gates import a1, a2, a3, a4, a5, a6, pinned_block
from harness_cli.investigation.gates.base import Gate, GateInput, violation
from harness_cli.investigation.gates.g_gates import g1, g2, g3, g4
from harness_cli.investigation.gates.n_gates import n1, n2, n3, n5
from harness_cli.investigation.gates.spot_checks import ceiling, d, eq1, g5, p7
from harness_cli.investigation.gates.table import GATES, TABLE
from harness_cli.investigation.review import ReviewVerdict
from harness_cli.investigation.thresholds import DEFAULT_THRESHOLDS, InvestigationThresholds
from harness_cli.loop.evidence import Evidence, new_fact_count
from harness_cli.loop.guard_notes import (
    GUARD_HEADING,
    pending_guard_notes,
    render_guard_notes,
)
from harness_cli.loop.report import CompletionReport, extract_report
from harness_cli.loop.verdict import Verdict

__all__ = [
    "ALL_GATES",
    "GATES",
    "GUARD_HEADING",
    "TABLE",
    "baseline",
    "evaluate",
    "evaluate_text",
    "missing_report",
    "pending_guard_notes",
    "pinned_block",
    "render_guard_notes",
]

# Every gate that can fire, in table order (the order violations are reported in). A7 never
# fires: it is ``pinned_block``, applied to every prompt.
ALL_GATES: tuple[Gate, ...] = (
    g1, g2, g3, g4, g5, n1, n2, n3, n5, a1, a2, a3, a4, a5, a6, eq1, p7, d
)  # fmt: skip


def evaluate(
    report: CompletionReport,
    previous: CompletionReport | None = None,
    review: ReviewVerdict | None = None,
    thresholds: InvestigationThresholds = DEFAULT_THRESHOLDS,
    *,
    prose: str = "",
    problems: Sequence[str] = (),
    history: Sequence[Verdict] | None = None,
    elapsed_seconds: float | None = None,
    evidence: Evidence | None = None,
) -> Verdict:
    """Run every gate on ``report`` and decide the next step.

    ``previous`` is the last iteration's report (G1, what was answered); ``review`` the
    adversarial/red-team verdict of this report (P7, G5, D); ``prose`` the model's text around
    the block (G2); ``problems`` the extractor's notes (REPORT); ``evidence`` what the loop saw
    on the wire (the run's tool calls for G4, the facts of earlier rounds for ``stalled``).
    ``history`` is the loop's verdicts so far — when reviewing, the reviewed iteration's verdict
    is its last. Without it, the history is ``previous`` evaluated on its own (and, with a
    review, this report's own verdict after it)."""
    if history is None:
        history = [evaluate(previous, thresholds=thresholds)] if previous is not None else []
        if review is not None:
            history.append(
                evaluate(
                    report,
                    previous,
                    None,
                    thresholds,
                    prose=prose,
                    problems=problems,
                    history=history,
                    evidence=evidence,
                )
            )
    inp = GateInput(
        report,
        previous,
        review,
        thresholds,
        prose,
        baseline=baseline(history, reviewing=review is not None),
        tools=evidence.run_tools if evidence is not None else None,
        catalog=evidence.catalog if evidence is not None else (),
    )
    found = [v for gate in ALL_GATES if family_on(gate) and (v := gate(inp)) is not None]
    found += [violation("REPORT", p) for p in problems]
    cap = ceiling(inp)
    verdict = Verdict(
        ceiling=cap,
        confidence=min(report.confidence, cap),
        claimed_confidence=report.confidence,
        violations=tuple(found),
        status=report.status,
        open_questions=len(report.open_questions),
        new_facts=new_fact_count(report, previous, evidence),
        causal_chain_complete=report.causal_chain_complete,
        review=review.summary() if review is not None else None,
    )
    decision = rules.next_step(history, verdict, thresholds, elapsed_seconds=elapsed_seconds)
    return replace(verdict, decision=decision)


def family_on(gate: Gate) -> bool:
    """The gate runs: its family's component and its own are on (always, outside an eval
    trial that ablates one of them; ``components.gate_on``)."""

    return components.gate_on(getattr(gate, "__name__", "").upper())


def baseline(history: Sequence[Verdict], *, reviewing: bool = False) -> int | None:
    """The harness's number before this round: the last verdict with a report (a review's
    lowered number included). A review is judged against what came before the iteration it
    reviews, which is the last verdict in ``history`` then."""
    past = list(history)
    if reviewing and past and past[-1].review is None:
        past.pop()
    return next((v.confidence for v in reversed(past) if v.report_ok), None)


def missing_report(
    problems: Sequence[str],
    history: Sequence[Verdict] = (),
    thresholds: InvestigationThresholds = DEFAULT_THRESHOLDS,
    *,
    elapsed_seconds: float | None = None,
) -> Verdict:
    """The verdict of an iteration that produced no valid block: a REPORT guard note, and the
    last known numbers carried forward (a missing block is not a confidence drop)."""
    last = history[-1] if history else None
    verdict = Verdict(
        ceiling=last.ceiling if last else 100,
        confidence=last.confidence if last else 0,
        claimed_confidence=last.claimed_confidence if last else 0,
        violations=tuple(violation("REPORT", p) for p in problems),
        status=last.status if last else "IN_PROGRESS",
        open_questions=last.open_questions if last else 0,
        new_facts=0,
        causal_chain_complete=False,
        report_ok=False,
    )
    decision = rules.next_step(history, verdict, thresholds, elapsed_seconds=elapsed_seconds)
    return replace(verdict, decision=decision)


def evaluate_text(
    text: str,
    previous: CompletionReport | None = None,
    review: ReviewVerdict | None = None,
    thresholds: InvestigationThresholds = DEFAULT_THRESHOLDS,
    *,
    history: Sequence[Verdict] | None = None,
    elapsed_seconds: float | None = None,
    evidence: Evidence | None = None,
) -> tuple[CompletionReport | None, Verdict]:
    """The loop's entry point: the model's raw output in, the parsed report (if any) and its
    verdict out. Never raises on a missing or malformed block."""
    found = extract_report(text)
    if found.report is None:
        past = list(history) if history is not None else []
        return None, missing_report(
            found.problems, past, thresholds, elapsed_seconds=elapsed_seconds
        )
    verdict = evaluate(
        found.report, previous, review, thresholds,
        prose=found.prose, problems=found.problems, history=history,
        elapsed_seconds=elapsed_seconds, evidence=evidence,
    )  # fmt: skip
    return found.report, verdict
