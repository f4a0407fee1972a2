"""The two spot-checks on top of the families (EQ1, P7) and the review-side gates (G5 red team,
D adversarial verdict); the ceiling they feed is computed in ``ceiling.py``."""

from __future__ import annotations

from harness_cli.investigation.gates.base import GateInput, listing, short, violation
from harness_cli.investigation.gates.ceiling import (
    base_ceiling,
    ceiling,
    eq1_cap,
    has_hard_evidence,
    p7_ceiling,
)
from harness_cli.investigation.review import DIMENSIONS
from harness_cli.loop.evidence import unbacked_citation
from harness_cli.loop.verdict import Violation

__all__ = ["base_ceiling", "ceiling", "d", "eq1", "g5", "has_hard_evidence", "p7", "p7_ceiling"]


def eq1(inp: GateInput) -> Violation | None:
    """Fires when the 60 % cap clamps the claim, and also whenever evidence was discounted
    (an unknown kind, a HARD item with no claim or no source): the model must hear why."""
    cap = eq1_cap(inp.report, inp.thresholds, inp.tools, inp.catalog)
    cause = inp.report.root_cause
    items = cause.evidence if cause is not None else []
    discounted = (
        [
            f"{short(e.claim or '(no claim)', 50)}: kind {e.stated_kind!r} read as INFERRED"
            for e in items
            if e.stated_kind
        ]
        + [
            f"{short(e.claim or '(no claim)', 50)}: HARD without "
            + ("a claim" if not e.claim.strip() else "a source")
            for e in items
            if e.kind == "HARD" and not e.is_hard
        ]
        + [
            f"{server} never answered this run: {short(e.claim, 30)}"
            for e in items
            if e.is_hard and (server := unbacked_citation(e.source, inp.tools, inp.catalog))
        ]
    )
    why = f" ({listing(discounted)})" if discounted else ""
    if cap is None or inp.report.confidence <= cap:
        if not discounted:
            return None
        return violation(
            "EQ1",
            f"evidence discounted: {listing(discounted)}. Mark each item HARD or INFERRED, and "
            "give a HARD item its claim and its source.",
        )
    return violation(
        "EQ1",
        f"no root-cause evidence is HARD (all INFERRED or none){why}: confidence capped at "
        f"{cap}%. Cite a log line, metric, query result or reproduction as HARD evidence, "
        "with its claim and its source.",
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
    """The adversarial verdict. Its notes are carried here in full, once: this violation is
    how the reviewer's critique reaches the next prompt."""
    if inp.review is None or inp.review.effective_severity == "none":
        return None
    review = inp.review
    severity = review.effective_severity
    stated = (
        f" (stated severity {review.severity!r}, but it failed {', '.join(review.failed)})"
        if severity != review.severity
        else ""
    )
    critique = " ".join(f"({i}) {' '.join(n.split())}" for i, n in enumerate(review.notes, 1))
    return violation(
        "D",
        f"adversarial review found {severity} issues{stated}"
        + (f"; the reviewer's notes, each to address: {critique}" if critique else "."),
    )
