"""N-gates: structural completeness, “what Claude omits”. N1, N2, N3 and N5 (the reference's
diagram names N5; there is no N4)."""

from __future__ import annotations

from harness_cli.investigation.gates.base import GateInput, listing, violation
from harness_cli.loop.verdict import Violation

_PLACEHOLDERS = frozenset({"", "tbd", "todo", "...", "…", "n/a", "na", "none", "draft", "-"})


def n1(inp: GateInput) -> Violation | None:
    missing = [
        a.description or "(no description)" for a in inp.report.actions if not a.verify_action
    ]
    if not missing:
        return None
    return violation(
        "N1",
        f"action(s) {listing(missing)} have no verify_action: a fix without a way to verify it "
        "is unfinished work; add {description, expected_outcome, timing} to each.",
    )


def n2(inp: GateInput) -> Violation | None:
    r = inp.report
    cause = r.root_cause
    if cause is not None and cause.summary.strip() and not cause.evidence:
        return violation(
            "N2",
            "the root cause cites no evidence items: list each supporting fact as "
            "{claim, kind: HARD|INFERRED, source}.",
        )
    if r.status == "COMPLETE" and (cause is None or not cause.summary.strip()):
        return violation(
            "N2",
            "COMPLETE without a root cause: state root_cause.summary and its evidence.",
        )
    return None


def n3(inp: GateInput) -> Violation | None:
    r = inp.report
    if r.status == "COMPLETE" and r.draft_response.strip().lower() in _PLACEHOLDERS:
        return violation(
            "N3",
            "COMPLETE with no draft_response: write the user-facing message; it is the only "
            "thing that reaches the ticket.",
        )
    return None


def n5(inp: GateInput) -> Violation | None:
    gaps = []
    for action in inp.report.actions:
        check = action.verify_action
        if check is None:
            continue  # N1's case
        absent = [
            name
            for name, value in (
                ("description", check.description),
                ("expected_outcome", check.expected_outcome),
                ("timing", check.timing),
            )
            if not value.strip()
        ]
        if absent:
            gaps.append(f"{action.description or '(no description)'}: no {'/'.join(absent)}")
    if not gaps:
        return None
    return violation(
        "N5",
        f"incomplete verify_action on {listing(gaps)}: each needs a description, an expected "
        "outcome and timing.",
    )
