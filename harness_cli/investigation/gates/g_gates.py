"""G-gates: logical consistency, “what Claude writes”. Four of them, G1-G4."""

from __future__ import annotations

import re

from harness_cli.investigation.gates.base import GateInput, listing, short, violation
from harness_cli.investigation.report import AdjacentProblem, UncheckedSource
from harness_cli.investigation.verdict import Violation

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


def g1_cap(inp: GateInput) -> int | None:
    """The previous confidence when G1 fires: the upward move is cancelled."""
    prev = inp.previous
    if prev is None:
        return None
    grew = len(inp.report.open_questions) > len(prev.open_questions)
    return prev.confidence if grew and inp.report.confidence > prev.confidence else None


def g1(inp: GateInput) -> Violation | None:
    prev = inp.previous
    if prev is not None and g1_cap(inp) is not None:
        before, after = len(prev.open_questions), len(inp.report.open_questions)
        return violation(
            "G1",
            f"open questions grew {before} → {after} while confidence rose "
            f"{prev.confidence}% → {inp.report.confidence}%; a growing denominator cancels any "
            f"upward move: confidence held at {prev.confidence}%. Close questions before "
            "raising it.",
        )
    return None


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
    """Skipped or declared unavailable by inference, not because of a recorded real error."""
    if isinstance(source, str):
        return True
    status = source.access_status
    return not _REAL_ERROR.search(status) or bool(_INFERRED.search(status))


def g4(inp: GateInput) -> Violation | None:
    r = inp.report
    if r.status != "BLOCKED":
        return None
    open_sources = [
        s if isinstance(s, str) else f"{s.name} ({s.access_status or 'no access_status'})"
        for s in r.unchecked_sources
        if reachable(s)
    ]
    blockers = any(
        not isinstance(p, str) and p.blocker.strip() for p in r.adjacent_problems
    ) or any(not isinstance(s, str) and not reachable(s) for s in r.unchecked_sources)
    if open_sources:
        return violation(
            "G4",
            f"BLOCKED while {listing(open_sources)} look reachable (no real error recorded): "
            "query them, or record the exact error each returned.",
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
