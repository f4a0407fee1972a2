"""The confidence rules, the three force-continue rules, the five exits and the exit line,
driven through ``evaluate`` with a growing history the way the loop drives them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness_cli.investigation.gates import evaluate
from harness_cli.investigation.review import DIMENSIONS, ReviewVerdict
from harness_cli.investigation.rules import (
    exit_line,
    force_count,
    iterations,
    split_actions,
    trajectory,
)
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.loop.report import CompletionReport, parse_report
from harness_cli.loop.verdict import Decision, Verdict
from tests.unit.test_gates import GOOD

T = InvestigationThresholds()


def make(**changes: Any) -> CompletionReport:
    data = copy.deepcopy(GOOD)
    data.update(changes)
    return parse_report(data)


def fresh(n: object, **changes: Any) -> CompletionReport:
    """A report with something new in it (an assumption of its own): the harness, not the
    report's ``new_facts``, decides what is new."""
    return make(assumption_register=[f"assumption {n}"], **changes)


def review(fails: int = 0, severity: str = "none", diverges: bool = False) -> ReviewVerdict:
    dims = {d: ("FAIL" if i < fails else "PASS") for i, d in enumerate(DIMENSIONS)}
    return ReviewVerdict.model_validate(
        {"dimensions": dims, "severity": severity,
         "red_team": {"hypothesis": "h", "diverges": diverges}}
    )  # fmt: skip


class Loop:
    """A history the way the investigation loop builds it: each iteration's verdict, and each
    review's verdict right after the iteration it reviewed."""

    def __init__(self, thresholds: InvestigationThresholds = T) -> None:
        self.t = thresholds
        self.history: list[Verdict] = []
        self.reports: list[CompletionReport] = []

    def step(
        self, report: CompletionReport, rv: ReviewVerdict | None = None, elapsed: float = 0
    ) -> str:
        earlier = self.reports if rv is None else self.reports[:-1]
        previous = earlier[-1] if earlier else None
        verdict = evaluate(
            report, previous, rv, self.t, history=self.history, elapsed_seconds=elapsed
        )
        if rv is None:
            self.reports.append(report)
        self.history.append(verdict)
        assert verdict.decision is not None
        return verdict.decision.action

    @property
    def decision(self) -> Decision:
        decision = self.history[-1].decision
        assert decision is not None
        return decision


def test_in_progress_continues_and_complete_goes_to_review() -> None:
    loop = Loop()
    assert loop.step(make(status="IN_PROGRESS", confidence=50)) == "continue"
    assert loop.step(make(confidence=75)) == "review"


def test_complete_with_open_questions_continues() -> None:
    loop = Loop()
    assert loop.step(make(open_questions=["q"], confidence=80)) == "continue"
    assert "open question" in loop.decision.reason


def test_a_blocking_gate_keeps_complete_from_review() -> None:
    assert Loop().step(make(actions=["restart"])) == "continue"


def test_confidence_force_three_times_then_blocked() -> None:
    loop = Loop()
    for n in (1, 2, 3):
        assert loop.step(fresh(n, confidence=65)) == "continue"
        assert loop.decision.force == "CONFIDENCE_FORCE"
        assert loop.decision.notes[0].startswith(f"[CONFIDENCE_FORCE {n}/3]")
    assert force_count(loop.history, "CONFIDENCE_FORCE") == 3
    assert loop.step(fresh(4, confidence=66)) == "exit_blocked"
    assert loop.decision.force is None


def test_causal_chain_force_three_times_then_blocked_never_complete() -> None:
    loop = Loop()
    for n in range(3):
        assert loop.step(fresh(n, causal_chain_complete=False)) == "continue"
        assert loop.decision.force == "CAUSAL_CHAIN_FORCE"
    assert loop.step(fresh("x", causal_chain_complete=False)) == "exit_blocked"
    assert loop.decision.exit_note == "root cause not traced after 3 forced rounds"
    # and a review of an untraced report never completes either
    rv = review()
    assert loop.step(make(causal_chain_complete=False), rv) == "continue"


def test_g_blocker_force_three_times_then_blocked_is_honoured() -> None:
    skipped = {"status": "BLOCKED", "unchecked_sources": [
        {"name": "db", "access_status": "assumed no access"}]}  # fmt: skip
    loop = Loop()
    for n in range(3):
        assert loop.step(fresh(n, **skipped)) == "continue"
        assert loop.decision.force == "G_BLOCKER_FORCE"
    assert loop.step(fresh("x", **skipped)) == "exit_blocked"
    assert loop.decision.exit_note == "unverified blockers after 3 forced rounds"


def test_honest_blocked_exits_at_once() -> None:
    loop = Loop()
    real = {"name": "db", "access_status": "permission denied (403) for svc-harness"}
    assert loop.step(make(status="BLOCKED", confidence=62, unchecked_sources=[real])) == (
        "exit_blocked"
    )
    assert loop.decision.exit_note == "cannot proceed without info"


def test_forced_rounds_count_inside_the_iteration_budget() -> None:
    loop = Loop(InvestigationThresholds(max_iterations=3))
    assert loop.step(fresh("a", status="IN_PROGRESS", confidence=40)) == "continue"
    assert loop.step(fresh("b", confidence=65)) == "continue"  # CONFIDENCE_FORCE
    assert loop.step(fresh("c", confidence=66)) == "exit_timeout"
    assert iterations(loop.history) == 3


def test_wall_clock_timeout() -> None:
    loop = Loop()
    assert loop.step(make(), elapsed=44 * 60) == "review"
    assert Loop().step(make(), elapsed=45 * 60) == "exit_timeout"


def progress(confidence: int, n: object, **changes: Any) -> CompletionReport:
    return fresh(n, status="IN_PROGRESS", confidence=confidence, **changes)


@pytest.mark.parametrize(
    ("claims", "action"),
    [
        ((85, 74), "continue"),  # one drop of 11 is not "across two consecutive rounds"
        ((80, 72, 64), "exit_degrading"),  # two drops of 8: 16 > 10
        ((80, 76, 72), "continue"),  # two drops of 4: 8 ≤ 10
        ((80, 70, 75, 64), "continue"),  # a rise in between breaks the streak
        ((90, 60, 55), "exit_degrading"),
    ],
)
def test_degrading_is_two_consecutive_drops_totalling_more_than_10(
    claims: tuple[int, ...], action: str
) -> None:
    loop = Loop()
    for n, claim in enumerate(claims[:-1]):
        loop.step(progress(claim, n))
    assert loop.step(progress(claims[-1], "last")) == action
    if action == "exit_degrading":
        assert loop.decision.exit_note == "dropped {}%→{}%→{}%".format(*claims[-3:])


def test_a_drop_the_ceiling_made_on_an_honest_report_is_no_degradation() -> None:
    # The model keeps 90 and honestly adds three open questions, then a fourth: A1 pulls the
    # harness's number down 90 → 76 → 68, but the model never went backwards.
    loop = Loop()
    assert loop.step(progress(90, 0)) == "continue"
    assert loop.step(progress(90, 1, open_questions=["q1", "q2", "q3"])) == "continue"
    assert loop.history[-1].confidence == 76
    more = ["q1", "q2", "q3", "q4"]
    assert loop.step(progress(90, 2, open_questions=more)) == "continue"
    assert loop.history[-1].confidence == 68


def test_stalled_is_computed_from_what_changed_not_from_new_facts() -> None:
    same = {"status": "IN_PROGRESS", "confidence": 50}
    loop = Loop()
    assert loop.step(make(**same, new_facts=["the same fact"])) == "continue"
    assert loop.step(make(**same, new_facts=["the same fact"])) == "continue"
    assert loop.step(make(**same, new_facts=["the same fact"])) == "exit_stalled"
    assert loop.decision.exit_note == "two rounds, zero new facts"
    # a report without any new_facts field that keeps learning never stalls
    loop = Loop()
    for n in range(4):
        data = {"status": "IN_PROGRESS", "confidence": 40 + 5 * n, "new_facts": []}
        assert loop.step(fresh(n, **data)) == "continue"
    # an answered open question is progress too
    loop = Loop()
    loop.step(make(**same, open_questions=["q1", "q2"]))
    loop.step(make(**same, open_questions=["q1"]))
    assert loop.step(make(**same, open_questions=[])) == "continue"


def test_rounds_without_a_readable_report_end_failed_not_stalled() -> None:
    from harness_cli.investigation.gates import missing_report

    history: list[Verdict] = []
    first = missing_report(["no completion report found"], history)
    assert first.decision is not None and first.decision.action == "continue"
    history.append(first)
    second = missing_report(["no completion report found"], history)
    assert second.decision is not None and second.decision.action == "exit_failed"
    assert second.decision.exit_code == 1
    assert second.decision.exit_note == "no readable completion report in 2 rounds"


def test_a_finished_round_without_new_facts_still_goes_to_review() -> None:
    loop = Loop()
    loop.step(make(status="IN_PROGRESS"))
    assert loop.step(make()) == "review"


# --- after the review ------------------------------------------------------------------------


def reviewed(rv: ReviewVerdict, confidence: int = 90, loop: Loop | None = None) -> Loop:
    """One round that goes to review and its review; each round brings something new (a
    round that brings nothing stalls, review or not: ``test_the_same_report_under_review``)."""
    loop = loop or Loop()
    report = fresh(len(loop.reports), confidence=confidence)
    assert loop.step(report) == "review"
    loop.step(report, rv)
    return loop


def test_the_same_report_under_review_stalls_after_two_rounds_with_nothing_new() -> None:
    """#31 item 8: a model re-sending the same report while the reviewers keep rejecting it
    stalls like one that continues, instead of running every iteration and every review."""
    loop = Loop()
    report = make(confidence=90)
    actions = []
    for _ in range(3):
        actions.append(loop.step(report))
        if actions[-1] == "review":
            loop.step(report, review(severity="critical"))
    assert actions == ["review", "review", "exit_stalled"], actions


def test_the_90_to_65_incident_sends_the_loop_back() -> None:
    # Five FAIL dimensions: 100 − 5×7 = 65, under the bar, even though severity is minor.
    loop = reviewed(review(fails=5, severity="minor"))
    assert (loop.history[-1].confidence, loop.decision.action) == (65, "continue")
    assert "lowered confidence to 65%" in loop.decision.reason
    # The lowered number is the next round's baseline, not a degradation.
    assert loop.step(make(confidence=70, new_facts=["checked the assumption"])) == "review"


def test_a_critical_review_goes_back_to_the_investigator() -> None:
    loop = reviewed(review(severity="critical"))
    assert loop.decision.action == "continue"
    assert "D" in loop.history[-1].codes


def test_a_clean_pass_completes_and_95_allows_auto_run() -> None:
    loop = reviewed(review(), confidence=96)
    assert loop.decision.action == "exit_complete" and loop.decision.auto_run
    assert not reviewed(review(), confidence=94).decision.auto_run


def test_minor_once_goes_round_again_minor_twice_completes() -> None:
    loop = reviewed(review(fails=1, severity="minor"))
    assert loop.decision.action == "continue"
    second = reviewed(review(fails=1, severity="minor"), loop=loop).decision
    assert second.action == "exit_complete"
    assert "2 consecutive minor-only passes" in second.reason


def test_a_critical_review_breaks_the_minor_streak() -> None:
    loop = reviewed(review(severity="minor"))
    reviewed(review(severity="critical"), loop=loop)
    reviewed(review(severity="minor"), loop=loop)
    assert loop.decision.action == "continue"


def test_red_team_divergence_blocks_complete() -> None:
    loop = reviewed(review(diverges=True))
    assert loop.decision.action == "continue"
    assert "G5" in loop.history[-1].codes


def test_review_verdicts_are_not_iterations() -> None:
    loop = reviewed(review(severity="minor"))
    assert iterations(loop.history) == 1
    assert trajectory(loop.history) == "90%"


# --- actions, exit line, trajectory ----------------------------------------------------------


def test_split_actions() -> None:
    safe = make().actions[0].model_copy(update={"kind": "jira_comment", "body": "fixed"})
    risky = safe.model_copy(update={"destructive": True})
    prose = safe.model_copy(update={"kind": ""})  # nothing the harness can run itself
    prod = safe.model_copy(update={"kind": "db_write"})
    assert split_actions([safe, risky, prose, prod], 95) == ([safe], [risky, prose, prod])
    assert split_actions([safe, risky], 94) == ([], [safe, risky])
    assert split_actions([safe], 99, completed=False) == ([], [safe])


REFERENCE = """\
exit=complete       confidence=89%  iterations=12  elapsed=13min
exit=blocked        confidence=62%  iterations=4   elapsed=4min    (cannot proceed without info)
exit=stalled        confidence=58%  iterations=7   elapsed=22min   (two rounds, zero new facts)
exit=degrading      confidence=42%  iterations=5   elapsed=8min    (dropped >15% twice)
exit=timeout        confidence=73%  iterations=18  elapsed=50min
"""
ARGS = [
    ("complete", 89, 12, 13, None),
    ("blocked", 62, 4, 4, "cannot proceed without info"),
    ("stalled", 58, 7, 22, "two rounds, zero new facts"),
    ("degrading", 42, 5, 8, "dropped >15% twice"),
    ("timeout", 73, 18, 50, None),
]


@pytest.mark.parametrize(("args", "line"), list(zip(ARGS, REFERENCE.splitlines(), strict=True)))
def test_exit_line_is_the_reference_shape(args: tuple[Any, ...], line: str) -> None:
    reason, confidence, its, minutes, note = args
    assert exit_line(reason, confidence, its, minutes * 60, note) == line


def test_exit_line_columns_hold_for_wide_values() -> None:
    line = exit_line("complete", 100, 100, 125 * 60 + 20, "x")
    assert line == "exit=complete       confidence=100% iterations=100 elapsed=125min  (x)"
    assert exit_line("complete", 5, 1, 20)[:36].endswith("  ")
