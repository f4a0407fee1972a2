"""The failure modes auto_retrospective records and kb-update tallies, and the SOP rule each one
suggests.

Reference (Loop 2): "the auto_retrospective step records which failure modes occurred, sorted
into three types: data-gathering failures (were reachable sources skipped?), quality-gate
violations (did a confidence claim contradict the evidence?) and analysis-completeness failures
(did root-cause tracing stop short?)". The gate codes are those of
``investigation/gates/table.py``; the type each one belongs to is decided here, once.

A mode id is ``<type>/<subject>``: ``quality_gate/A1``, ``data_gathering/skipped:orders-db``,
``analysis_completeness/exit:stalled``. The same mistake gets the same id in every case, so a
project's last ten cases can be tallied by id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

FailureType = Literal["data_gathering", "quality_gate", "analysis_completeness"]
TYPES: tuple[FailureType, ...] = ("data_gathering", "quality_gate", "analysis_completeness")


@dataclass(frozen=True)
class ModeSpec:
    type: FailureType
    label: str
    """What happened, short enough to quote: "skipped direct DB query"."""
    rule: str
    """The SOP rule a recurrence suggests (kb-update), written as an instruction."""


GATE_MODES: dict[str, ModeSpec] = {
    "G4": ModeSpec(
        "data_gathering",
        "declared BLOCKED while reachable sources were skipped",
        "query every reachable source before declaring BLOCKED, and record the exact error of "
        'each source that failed; an inferred "probably restricted" is not a blocker',
    ),
    "A1": ModeSpec(
        "quality_gate",
        "claimed confidence above the arithmetic cap",
        "list the open questions and unchecked sources before stating confidence; each open "
        "question costs 8 points and each unchecked source 5",
    ),
    "EQ1": ModeSpec(
        "quality_gate",
        "claimed more than 60% with no HARD evidence under the root cause",
        "cite at least one HARD evidence item (query output, log line, code line) under the "
        "root cause before claiming more than 60% confidence",
    ),
    "G1": ModeSpec(
        "quality_gate",
        "raised confidence while open questions grew",
        "never raise confidence in a round that added open questions",
    ),
    "G2": ModeSpec(
        "quality_gate",
        "left tension in the prose out of the contradiction register",
        'enter every "however", "but" or "contradicts" of the write-up in the '
        "contradiction register",
    ),
    "G3": ModeSpec(
        "quality_gate",
        "tracked sources or adjacent problems as placeholder strings",
        "track unchecked sources as {name, access_status} and adjacent problems as {summary, "
        "status, blocker}, never as placeholder strings",
    ),
    "A3": ModeSpec(
        "quality_gate",
        "concluded with an empty assumption register",
        "write down every assumption the conclusion rests on before concluding",
    ),
    "P7": ModeSpec(
        "quality_gate",
        "failed adversarial review dimensions",
        "run the D1-D15 adversarial checklist yourself before asking for review",
    ),
    "D": ModeSpec(
        "quality_gate",
        "adversarial review found critical issues",
        "run the D1-D15 adversarial checklist yourself before asking for review",
    ),
    "A5": ModeSpec(
        "analysis_completeness",
        "stopped at the symptom: causal chain not traced",
        "trace the causal chain to the change that introduced the fault before COMPLETE; a "
        "symptom is not a root cause",
    ),
    "N2": ModeSpec(
        "analysis_completeness",
        "left the root cause as a stub without evidence",
        "back the root cause with evidence items; a summary alone is a stub",
    ),
    "A4": ModeSpec(
        "analysis_completeness",
        "proposed no action on the root cause",
        "make at least one proposed action act on the root cause itself",
    ),
    "A2": ModeSpec(
        "analysis_completeness",
        "concluded with adjacent problems still open",
        "close or explicitly scope out every adjacent problem before COMPLETE",
    ),
    "A6": ModeSpec(
        "analysis_completeness",
        "proposed a destructive action off the root cause",
        "propose a destructive action only when it acts on the root cause",
    ),
    "N1": ModeSpec(
        "analysis_completeness",
        "proposed a fix without a way to verify it",
        "pair every fix action with a verify_action (description, expected outcome, timing)",
    ),
    "N5": ModeSpec(
        "analysis_completeness",
        "gave an incomplete verify_action",
        "give every verify_action a description, an expected outcome and its timing",
    ),
    "N3": ModeSpec(
        "analysis_completeness",
        "marked COMPLETE without the user-facing answer",
        "write the draft_response before marking COMPLETE",
    ),
    "G5": ModeSpec(
        "analysis_completeness",
        "red team reached a different explanation",
        "write down what an outsider would guess from the ticket alone, and show why the "
        "finding differs, before concluding",
    ),
}
"""Every gate code that is a failure mode. ``A7`` (a pin, never a violation) and ``REPORT`` (a
missing block: a format problem, none of the three types) are not."""

EXIT_MODES: dict[str, ModeSpec] = {
    "stalled": ModeSpec(
        "analysis_completeness",
        "stalled: two rounds without new facts",
        "when two rounds bring no new facts, switch to another data source (logs, the "
        "database, the code) instead of re-reading the same one",
    ),
    "timeout": ModeSpec(
        "analysis_completeness",
        "used up the iteration budget",
        "prune the hypothesis slate in the first rounds and spend the rest on the strongest one",
    ),
    "degrading": ModeSpec(
        "analysis_completeness",
        "confidence degraded round after round",
        "when confidence falls two rounds in a row, go back to the last hypothesis the "
        "evidence supported",
    ),
}
"""Investigation exits that mean root-cause tracing stopped short (``complete`` and an honest
``blocked`` do not)."""

GAP_MODES: dict[str, ModeSpec] = {
    "skipped_source": ModeSpec(
        "data_gathering",
        "skipped a data source (gap analyzer)",
        "list the data sources of this project in the SOP and check each one before concluding",
    ),
    "wrong_tool": ModeSpec(
        "data_gathering",
        "used the wrong tool for a source (gap analyzer)",
        "name, for each data source, the tool to read it with",
    ),
}
"""Gap-report categories that are data-gathering failures; the other categories (pipeline
bugs, missing tests, MR format) are harness defects for Loop 1, not investigation habits."""


def slug(text: str, limit: int = 60) -> str:
    cleaned = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return cleaned[:limit].rstrip("-") or "unnamed"


def skipped_source_mode(name: str) -> tuple[str, ModeSpec]:
    """A reachable source left unchecked at the end: the reference's own example."""
    subject = " ".join(name.split()) or "a source"
    return (
        f"data_gathering/skipped:{slug(subject)}",
        ModeSpec(
            "data_gathering",
            f"skipped {subject}",
            f"require {subject} to be checked directly (or its exact error recorded) before "
            "any inference about what it holds",
        ),
    )


def spec_for(mode_id: str, label: str = "") -> ModeSpec:
    """The spec behind a recorded mode id (for kb-update, which reads ids back from disk)."""
    kind, _, subject = mode_id.partition("/")
    if subject.startswith("skipped:"):
        _, spec = skipped_source_mode(label.removeprefix("skipped ") or subject[8:])
        return spec
    if subject.startswith("exit:") and subject[5:] in EXIT_MODES:
        return EXIT_MODES[subject[5:]]
    if subject.startswith("gap:") and subject[4:] in GAP_MODES:
        return GAP_MODES[subject[4:]]
    if subject in GATE_MODES:
        return GATE_MODES[subject]
    known: FailureType = next((t for t in TYPES if t == kind), "analysis_completeness")
    return ModeSpec(known, label or subject, f"add a rule to the SOP that prevents: {label}")


def suggestion_text(label: str, rule: str, count: int, window: int) -> str:
    """The reference's shape: "skipped direct DB query" fired 3 times → the SOP now requires…"""
    times = "once" if count == 1 else f"{count} times"
    return f'"{label}" fired {times} in the last {window} cases → {rule}.'
