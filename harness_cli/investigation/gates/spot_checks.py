"""The two spot-checks on top of the families (EQ1, P7), the review-side gates (G5 red team,
D adversarial verdict), and the ceiling they all feed."""

from __future__ import annotations

from harness_cli.investigation.gates.a_gates import a1_ceiling
from harness_cli.investigation.gates.base import GateInput, listing, short, violation
from harness_cli.investigation.gates.g_gates import g1_cap
from harness_cli.investigation.report import CompletionReport
from harness_cli.investigation.review import DIMENSIONS
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.investigation.verdict import Violation


def has_hard_evidence(report: CompletionReport) -> bool:
    cause = report.root_cause
    return cause is not None and any(e.kind != "INFERRED" for e in cause.evidence)


def eq1_cap(report: CompletionReport, t: InvestigationThresholds) -> int | None:
    """60 when no root-cause evidence is HARD (including no root cause yet), else no cap."""
    return None if has_hard_evidence(report) else t.inferred_only_cap


def p7_ceiling(base: int, fails: int, t: InvestigationThresholds) -> int:
    """Down 7 points per FAIL dimension, not below the 40 floor; a base already under the
    floor stays where it is (P7 lowers, it never raises)."""
    if fails <= 0:
        return base
    return min(base, max(base - t.adversarial_fail_penalty * fails, t.adversarial_floor))


def base_ceiling(inp: GateInput) -> int:
    """A1, then EQ1 and G1 where they apply: the cap before any review."""
    caps = [a1_ceiling(inp.report, inp.thresholds)]
    caps += [c for c in (eq1_cap(inp.report, inp.thresholds), g1_cap(inp)) if c is not None]
    return min(caps)


def ceiling(inp: GateInput) -> int:
    fails = len(inp.review.failed) if inp.review else 0
    return p7_ceiling(base_ceiling(inp), fails, inp.thresholds)


def eq1(inp: GateInput) -> Violation | None:
    cap = eq1_cap(inp.report, inp.thresholds)
    if cap is None or inp.report.confidence <= cap:
        return None
    return violation(
        "EQ1",
        f"no root-cause evidence is HARD (all INFERRED or none): confidence capped at {cap}%. "
        "Cite a log line, metric, query result or reproduction as HARD evidence.",
    )


def p7(inp: GateInput) -> Violation | None:
    if inp.review is None or not inp.review.failed:
        return None
    failed = inp.review.failed
    named = [f"{d} {DIMENSIONS[d]}" for d in failed]
    notes = [inp.review.dimensions[d].note for d in failed if inp.review.dimensions[d].note]
    return violation(
        "P7",
        f"the adversarial review failed {len(failed)} dimension(s) ({', '.join(named)}): "
        f"ceiling lowered to {ceiling(inp)}%"
        + (f"; reviewer: {listing(notes)}" if notes else "")
        + ".",
    )


def g5(inp: GateInput) -> Violation | None:
    if inp.review is None or not inp.review.red_team.diverges:
        return None
    team = inp.review.red_team
    return violation(
        "G5",
        f"the red team, shown only the problem and the conclusion, reached a different "
        f"hypothesis: “{short(team.hypothesis, 160)}”"
        + (f" ({short(team.note, 160)})" if team.note else "")
        + ". Rule it out with evidence or revise the conclusion.",
    )


def d(inp: GateInput) -> Violation | None:
    if inp.review is None or inp.review.severity == "none":
        return None
    review = inp.review
    critique = f": {listing(review.notes, 5)}" if review.notes else ""
    return violation("D", f"adversarial review found {review.severity} issues{critique}.")
