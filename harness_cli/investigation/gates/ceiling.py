"""The confidence ceiling: the caps A1, EQ1, G1 and P7 feed, in the one order they apply.

A1 and EQ1 cap what the report can claim; G1 then holds the harness's own number at its value
before the round when open questions grew (so G1 compares the harness's number, not the
model's claim); P7 lowers what is left per FAIL dimension of a review.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_cli import components
from harness_cli.investigation.gates.a_gates import a1_ceiling
from harness_cli.investigation.gates.base import GateInput
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.loop.evidence import ToolUse, unbacked_citation
from harness_cli.loop.report import CompletionReport, Evidence


def hard_evidence(
    report: CompletionReport,
    tools: Sequence[ToolUse] | None = None,
    catalog: Sequence[str] = (),
) -> list[Evidence]:
    """The root cause's HARD items that count: a claim, a source, and — when the run's calls
    are known — no citation of a catalog source this run never got an answer from ("HARD
    evidence must cite a tool call this run made")."""
    cause = report.root_cause
    if cause is None:
        return []
    return [
        e for e in cause.evidence if e.is_hard and not unbacked_citation(e.source, tools, catalog)
    ]


def has_hard_evidence(
    report: CompletionReport,
    tools: Sequence[ToolUse] | None = None,
    catalog: Sequence[str] = (),
) -> bool:
    return bool(hard_evidence(report, tools, catalog))


def eq1_cap(
    report: CompletionReport,
    t: InvestigationThresholds,
    tools: Sequence[ToolUse] | None = None,
    catalog: Sequence[str] = (),
) -> int | None:
    """60 when no root-cause evidence is HARD with a claim and a source backed by this run's
    calls (including no root cause yet), else no cap."""
    return None if has_hard_evidence(report, tools, catalog) else t.inferred_only_cap


def claim_ceiling(inp: GateInput) -> int:
    """A1, then EQ1 where it applies: the cap on what the report itself asserts (each only
    while it is on: ``components.gate_on``, its family's switch and its own)."""
    caps = [a1_ceiling(inp.report, inp.thresholds) if components.gate_on("A1") else 100]
    eq1 = (
        eq1_cap(inp.report, inp.thresholds, inp.tools, inp.catalog)
        if components.gate_on("EQ1")
        else None
    )
    return min(caps + ([eq1] if eq1 is not None else []))


def g1_cap(inp: GateInput) -> int | None:
    """G1: "fires when open_questions grew during the round yet confidence went up, because a
    growing denominator cancels any upward move". The confidence is the harness's: if the
    number A1/EQ1 leave would rise above the harness's number before the round (``baseline``)
    while open questions grew, it is held at that baseline."""

    prev, base = inp.previous, inp.baseline
    if prev is None or base is None or not components.gate_on("G1"):
        return None
    grew = len(inp.report.open_questions) > len(prev.open_questions)
    rising = min(inp.report.confidence, claim_ceiling(inp)) > base
    return base if grew and rising else None


def base_ceiling(inp: GateInput) -> int:
    """A1, EQ1 and G1 where they apply: the cap before any review."""
    cap = claim_ceiling(inp)
    held = g1_cap(inp)
    return cap if held is None else min(cap, held)


def p7_ceiling(base: int, fails: int, t: InvestigationThresholds) -> int:
    """Down 7 points per FAIL dimension, not below the 40 floor; a base already under the
    floor stays where it is (P7 lowers, it never raises)."""

    if fails <= 0 or not components.gate_on("P7"):
        return base
    return min(base, max(base - t.adversarial_fail_penalty * fails, t.adversarial_floor))


def ceiling(inp: GateInput) -> int:
    fails = len(inp.review.failed) if inp.review else 0
    return p7_ceiling(base_ceiling(inp), fails, inp.thresholds)
