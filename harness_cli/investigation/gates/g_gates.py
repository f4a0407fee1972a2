"""G-gates: logical consistency, “what Claude writes”. Four of them, G1-G4."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness_cli.investigation.gates.base import GateInput, listing, short, violation
from harness_cli.investigation.gates.ceiling import claim_ceiling, g1_cap
from harness_cli.loop.evidence import ToolUse, failed_call, queried
from harness_cli.loop.report import AdjacentProblem, UncheckedSource
from harness_cli.loop.verdict import Violation

# Words that signal two observations pulling apart. "but also" / "not only … but" are
# additive, not tension, and are removed before matching.
TENSION = re.compile(
    r"\b(however|but|contradict\w*|inconsisten\w*|although|though|on the other hand|despite|"
    r"whereas|nevertheless|nonetheless|conflicts? with|conflicting|at odds|in contrast|"
    r"does(?:n't| not) (?:match|add up|line up|explain))\b",
    re.IGNORECASE,
)
_ADDITIVE = re.compile(r"\bbut also\b|\ball but\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")

# An access_status that records a real failure …
_REAL_ERROR = re.compile(
    r"\b(error|denied|forbidden|unauthori[sz]ed|refused|timed? ?out|not found|failed|"
    r"exception|rate[- ]limited|[45]\d\d)\b",
    re.IGNORECASE,
)
# … unless it hedges: unavailability "declared by inference".
_INFERRED = re.compile(
    r"\b(probabl\w*|likely|assum\w*|presum\w*|might|may|seems?|appears?|guess\w*|suspect\w*|"
    r"unknown|untested|unverified|inferred|skipped|expected to|not (?:yet )?(?:checked|tried|"
    r"attempted|queried|accessed))\b",
    re.IGNORECASE,
)


def g1(inp: GateInput) -> Violation | None:
    held = g1_cap(inp)
    if held is None or inp.previous is None:
        return None
    before, after = len(inp.previous.open_questions), len(inp.report.open_questions)
    rising = min(inp.report.confidence, claim_ceiling(inp))
    return violation(
        "G1",
        f"open questions grew {before} → {after} while confidence rose {held}% → {rising}%; "
        f"a growing denominator cancels any upward move: confidence held at {held}%. Close "
        "questions before raising it.",
    )


def tension_sentences(text: str) -> list[str]:
    return [
        s.strip()
        for s in _SENTENCE.split(text)
        if s.strip() and TENSION.search(_ADDITIVE.sub(" ", s))
    ]


def g2(inp: GateInput) -> Violation | None:
    if inp.report.contradiction_register:
        return None
    found = tension_sentences(inp.prose) + tension_sentences(inp.report.draft_response)
    if not found:
        return None
    return violation(
        "G2",
        f"the text signals tension ({listing(found, 2)}) but the contradiction register is "
        "empty: record each contradiction there, or rewrite the sentence if there is none.",
    )


def _invalid_problem(item: AdjacentProblem | str) -> bool:
    return isinstance(item, str) or not item.summary.strip() or not item.status.strip()


def _invalid_source(item: UncheckedSource | str) -> bool:
    return isinstance(item, str) or not item.name.strip()


def g3(inp: GateInput) -> Violation | None:
    r = inp.report
    problems = [_describe(p) for p in r.adjacent_problems if _invalid_problem(p)]
    sources = [_describe(s) for s in r.unchecked_sources if _invalid_source(s)]
    if not problems and not sources:
        return None
    parts = []
    if problems:
        parts.append(f"adjacent_problems {listing(problems)} are not valid status objects")
    if sources:
        parts.append(f"unchecked_sources {listing(sources)} are not valid objects")
    return violation(
        "G3",
        "; ".join(parts) + ": write each as {summary, status, blocker} / {name, access_status}, "
        "not a placeholder string.",
    )


def reachable(source: UncheckedSource | str) -> bool:
    """By its wording alone: skipped or declared unavailable by inference, not because of a
    recorded real error. Only for reports checked without the run's tool calls (``harness
    gates``, the retrospective); the loop's G4 goes by the tool calls themselves."""
    if isinstance(source, str):
        return True
    status = source.access_status
    return not _REAL_ERROR.search(status) or bool(_INFERRED.search(status))


def unverified(source: UncheckedSource | str, tools: Sequence[ToolUse] | None) -> bool:
    """Not shown unavailable: with the run's tool calls, no call to it failed in this run
    ("a source is unavailable only if a tool call to it failed"); without them, its wording."""
    if tools is None:
        return reachable(source)
    return failed_call(source, tools) is None


def g4(inp: GateInput) -> Violation | None:
    """G_BLOCKER_FORCE's gate: “status=BLOCKED while reachable technical sources were
    skipped or declared unavailable by inference and not because of a real error”. What the
    report says about a source's access is not believed; the run's tool calls are."""
    r, tools = inp.report, inp.tools
    if r.status != "BLOCKED":
        return None
    open_sources = [
        s if isinstance(s, str) else f"{s.name} ({s.access_status or 'no access_status'})"
        for s in r.unchecked_sources
        if unverified(s, tools)
    ]
    # The catalog is the list of reachable sources: one never queried in this run is
    # unchecked whether or not the report names it.
    if tools is not None:
        called = queried(tools)
        open_sources += [f"{s} (configured, never queried)" for s in inp.catalog if s not in called]
    if tools is not None and not tools:
        which = f" ({listing(open_sources)} look reachable)" if open_sources else ""
        return violation(
            "G4",
            f"BLOCKED before a single tool call in this run{which}: nothing was tried, so "
            "nothing is known to be unavailable. Query the sources first; record the exact "
            "error each call returns.",
        )
    blockers = any(
        not isinstance(p, str) and p.blocker.strip() for p in r.adjacent_problems
    ) or any(not unverified(s, tools) for s in r.unchecked_sources)
    if open_sources:
        why = (
            "no tool call to it failed in this run"
            if tools is not None
            else "no real error recorded"
        )
        return violation(
            "G4",
            f"BLOCKED while {listing(open_sources)} look reachable ({why}): a source is "
            "unavailable only when a call to it fails — query each one, and record the exact "
            "error the call returned.",
        )
    if not blockers:
        return violation(
            "G4",
            "BLOCKED without a recorded blocker: name the source that failed (with its error) "
            "or the adjacent problem a human must clear.",
        )
    return None


def _describe(item: object) -> str:
    if isinstance(item, str):
        return item
    return short(str(getattr(item, "summary", "") or getattr(item, "name", "") or item))
