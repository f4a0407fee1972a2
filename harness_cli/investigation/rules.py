"""What happens after a verdict: the confidence rules, the three force-continue rules and the
exits. Pure functions over the history of verdicts (oldest first; review verdicts sit in it
too, right after the iteration they reviewed). The exit line and the sparkline: ``exits.py``.

Confidence rules (thresholds from ``InvestigationThresholds``):
  * under 70 the loop cannot be left through COMPLETE;
  * 70+ with COMPLETE and no open questions (and no blocking gate) → ``review``;
  * 95+ → non-destructive actions may auto-run — only on a ``complete`` exit — else they stay
    drafts for the operator;
  * “a drop of more than 10% across two consecutive rounds” → ``exit_degrading``: two drops in
    a row totalling more than 10 points, each the smaller of the claimed and the harness's
    drop (a drop the harness's own ceiling made while the claim held is none). A review's
    lowering (P7, the 90 → 65 incident) is not a round: it becomes the next round's baseline.
Force-continue: CONFIDENCE_FORCE, CAUSAL_CHAIN_FORCE, G_BLOCKER_FORCE overrule an exit signal at
most 3 times each, inside the 20-iteration budget. Once CONFIDENCE_FORCE is spent the loop exits
``blocked`` (it cannot leave as complete under the bar); once CAUSAL_CHAIN_FORCE is spent it
exits ``blocked`` too — never complete without a traced root cause; once G_BLOCKER_FORCE is
spent BLOCKED is honoured, its note saying the unavailability was never shown by a failed call.

The exits: the reference's five (complete, blocked, stalled, degrading, timeout) and
``failed``, when the run could not investigate: the model unreachable or its credentials
refused (``runs.ModelUnavailable``, decided by the loop) or no readable completion report for
``unreadable_report_rounds`` rounds in a row (decided here). ``failed`` is the one exit with a
non-zero exit code.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_cli import components
from harness_cli.investigation.exits import exit_line, trajectory
from harness_cli.investigation.thresholds import DEFAULT_THRESHOLDS, InvestigationThresholds
from harness_cli.loop.report import Action
from harness_cli.loop.verdict import Decision, ForceRule, ReviewSummary, Verdict

__all__ = [
    "EXIT_NOTES",
    "exit_line",
    "force_count",
    "iterations",
    "next_step",
    "split_actions",
    "trajectory",
]

EXIT_NOTES = {"blocked": "cannot proceed without info", "stalled": "two rounds, zero new facts"}

# Gates whose block is handled by a rule below rather than by the generic "a gate blocks".
_RULE_HANDLED = frozenset({"G4", "A5", "G5", "D"})


def force_count(history: Sequence[Verdict], rule: ForceRule) -> int:
    return sum(1 for v in history if v.decision is not None and v.decision.force == rule)


def iterations(history: Sequence[Verdict], verdict: Verdict | None = None) -> int:
    """Investigation iterations so far (a review is not an iteration)."""
    done = sum(1 for v in history if v.review is None)
    return done + (1 if verdict is not None and verdict.review is None else 0)


def next_step(
    history: Sequence[Verdict],
    verdict: Verdict,
    thresholds: InvestigationThresholds = DEFAULT_THRESHOLDS,
    *,
    elapsed_seconds: float | None = None,
) -> Decision:
    """The decision for ``verdict`` given the verdicts before it. Precedence: a degrading
    trend; rounds without a readable report; then the decision its status calls for (review,
    force-continue, or the complete and blocked exits); then the wall clock; then, for a
    ``continue``, stalled and the iteration budget (so forced rounds count inside it)."""
    t = thresholds
    degrading = _degrading(history, verdict, t)
    if degrading is not None:
        return degrading
    unreadable = _unreadable(history, verdict, t)
    if unreadable is not None:
        return unreadable
    natural = _natural(history, verdict, t)
    if natural.is_exit:
        return natural
    if elapsed_seconds is not None and elapsed_seconds >= t.wall_clock_minutes * 60:
        return wall_clock_used_up(t)
    # A round that goes to review is a round too: a model re-sending the same report while
    # the reviewers keep rejecting it learns nothing, and must stall like one that continues
    # (#31 item 8: 20 iterations and 20 reviews otherwise).
    # A first review is never a stall: only once the reviewers have sent a report back.
    reviewed = natural.action == "review" and any(v.review is not None for v in history)
    if natural.action == "continue" or reviewed:
        if _stalled(history, verdict, t):
            return Decision(
                "exit_stalled",
                f"{t.stalled_rounds} rounds in a row with zero new facts (nothing new in the "
                "reports or the tool results)",
                exit_note=EXIT_NOTES["stalled"],
            )
        if natural.action == "continue" and iterations(history, verdict) >= t.max_iterations:
            return Decision("exit_timeout", f"iteration budget of {t.max_iterations} used up")
    return natural


def wall_clock_used_up(t: InvestigationThresholds, *, cut: str | None = None) -> Decision:
    """The ``timeout`` exit on the wall clock (``wall_clock_minutes``), checked between
    iterations and, through the deadline every model call gets (``CaseRunner.deadline``),
    inside one: a call still running when the wall clock runs out (a stalled stream, a model
    that never answers) is cut there (``cut``: its role) instead of waiting for its own
    900 s limit."""
    reason = f"wall clock of {t.wall_clock_minutes:g} min used up"
    if cut is None:
        return Decision("exit_timeout", reason)
    return Decision(
        "exit_timeout",
        f"{reason}: the {cut} call was still running and was cut at it (the model service "
        "answered too slowly or its stream stalled)",
        exit_note=f"{cut} call cut at the wall clock",
    )


def _points(history: Sequence[Verdict], verdict: Verdict) -> list[tuple[int, int]]:
    """(claimed, harness's) confidence per round with a report, oldest first; a review
    replaces its iteration's point with its lowered number (the next round's baseline)."""
    points: list[tuple[int, int]] = []
    for v in [*history, verdict]:
        if not v.report_ok:
            continue
        point = (v.claimed_confidence, v.confidence)
        if v.review is not None and points:
            points[-1] = point
        elif v.review is None:
            points.append(point)
    return points


def round_drop(before: tuple[int, int], after: tuple[int, int]) -> int:
    """How far a round went backwards: the smaller of the claimed and the harness's drop."""
    return max(0, min(before[0] - after[0], before[1] - after[1]))


def _degrading(
    history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds
) -> Decision | None:
    if verdict.review is not None or not verdict.report_ok:
        return None
    points = _points(history, verdict)
    if len(points) < 3:
        return None
    a, b, c = points[-3:]
    first, second = round_drop(a, b), round_drop(b, c)
    if not (first and second) or first + second <= t.degrading_drop:
        return None
    return Decision(
        "exit_degrading",
        f"confidence dropped {a[1]}% → {b[1]}% → {c[1]}% in two consecutive rounds ("
        f"{first + second} points, more than {t.degrading_drop}): the investigation is going "
        "backwards",
        exit_note=f"dropped {a[1]}%→{b[1]}%→{c[1]}%",
    )


def _unreadable(
    history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds
) -> Decision | None:
    if verdict.review is not None or verdict.report_ok:
        return None
    window = [*(v for v in history if v.review is None), verdict][-t.unreadable_report_rounds :]
    if len(window) < t.unreadable_report_rounds or any(v.report_ok for v in window):
        return None
    n = t.unreadable_report_rounds
    return Decision(
        "exit_failed",
        f"no readable completion report in {n} rounds in a row: the model is not producing "
        "the contract (see the REPORT notes in iterations/)",
        exit_note=f"no readable completion report in {n} rounds",
        exit_code=1,
    )


def _stalled(history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds) -> bool:
    if verdict.review is not None:
        return False
    window = [*(v for v in history if v.review is None), verdict][-t.stalled_rounds :]
    return len(window) >= t.stalled_rounds and all(v.report_ok and v.new_facts == 0 for v in window)


def _force(
    history: Sequence[Verdict], rule: ForceRule, t: InvestigationThresholds, why: str
) -> Decision | None:
    used = force_count(history, rule)
    if used >= t.force_continue_max:
        return None
    note = f"[{rule} {used + 1}/{t.force_continue_max}] {why}"
    return Decision("continue", f"{rule}: {why}", force=rule, notes=(note,))


def _natural(history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds) -> Decision:
    if not verdict.report_ok:
        return Decision("continue", "no valid completion report this round")
    if verdict.review is not None:
        return _after_review(history, verdict, verdict.review, t)
    if verdict.status == "IN_PROGRESS":
        return Decision("continue", "investigation in progress")
    if verdict.status == "BLOCKED":
        return _blocked(history, verdict, t)
    if verdict.open_questions:
        return Decision(
            "continue",
            f"COMPLETE with {verdict.open_questions} open question(s): answer or drop them",
            notes=("[COMPLETE] you declared COMPLETE with open questions: answer each one or "
                   "explain why it no longer matters and remove it.",),
        )  # fmt: skip
    # force_rules off (an eval ablation): the model's exit signal is taken as given.
    forcing = components.enabled("force_rules")
    if verdict.confidence < t.exit_confidence and forcing:
        forced = _force(
            history, "CONFIDENCE_FORCE", t,
            f"you declared COMPLETE at {verdict.confidence}% confidence, under the "
            f"{t.exit_confidence}% bar: the loop cannot be left below it. Find what holds the "
            "number down and resolve it.",
        )  # fmt: skip
        if forced is not None:
            return forced
        return Decision(
            "exit_blocked",
            f"confidence stayed under {t.exit_confidence}% after "
            f"{t.force_continue_max} forced rounds",
            exit_note=f"under {t.exit_confidence}% after {t.force_continue_max} forced rounds",
        )
    if not verdict.causal_chain_complete and forcing:
        return _untraced(history, verdict, t)
    blocking = _blocking(verdict)
    if blocking:
        return Decision("continue", f"gates block the exit: {', '.join(blocking)}")
    return Decision("review", "ready for the adversarial and red-team reviews")


def _blocked(history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds) -> Decision:
    if "G4" not in verdict.codes or not components.enabled("force_rules"):
        return Decision(
            "exit_blocked", "blocked: a human has to clear it", exit_note=EXIT_NOTES["blocked"]
        )
    forced = _force(
        history, "G_BLOCKER_FORCE", t,
        "you declared BLOCKED while reachable sources were skipped or declared unavailable "
        "by inference (G4): query them, or record the real error each call returned.",
    )  # fmt: skip
    if forced is not None:
        return forced
    return Decision(
        "exit_blocked",
        f"blocked after {t.force_continue_max} forced rounds, with blockers no failed tool "
        "call ever showed: the operator has to judge them",
        exit_note=f"unverified blockers after {t.force_continue_max} forced rounds",
    )


def _untraced(history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds) -> Decision:
    """CAUSAL_CHAIN_FORCE, and past it a named exit: “No complete without a traced root
    cause” — a symptom-level finding never reaches the reviewers, let alone ``complete``."""
    forced = _force(
        history, "CAUSAL_CHAIN_FORCE", t,
        f"you declared COMPLETE at {verdict.confidence}% but causal_chain_complete is not "
        "true: a symptom-level finding. Trace the chain from trigger to symptom.",
    )  # fmt: skip
    if forced is not None:
        return forced
    return Decision(
        "exit_blocked",
        f"the root cause is still not traced after {t.force_continue_max} forced rounds "
        "(causal_chain_complete is not true): a symptom-level finding cannot complete",
        exit_note=f"root cause not traced after {t.force_continue_max} forced rounds",
    )


def _blocking(verdict: Verdict) -> list[str]:
    return [
        v.code
        for v in verdict.violations
        if v.effect == "block_exit" and v.code not in _RULE_HANDLED
    ]


def _minor_pass(verdict: Verdict, t: InvestigationThresholds) -> bool:
    review = verdict.review
    return (
        review is not None
        and review.severity == "minor"
        and not review.diverges
        and verdict.confidence >= t.exit_confidence
        and verdict.causal_chain_complete
        and not _blocking(verdict)
    )


def _after_review(
    history: Sequence[Verdict], verdict: Verdict, review: ReviewSummary, t: InvestigationThresholds
) -> Decision:
    """``review.severity`` is the effective one (``ReviewVerdict.effective_severity``): a
    "none" with FAIL dimensions arrives here as minor."""
    if review.severity == "critical":
        return Decision("continue", "the adversarial review found critical issues")
    if verdict.confidence < t.exit_confidence:
        return Decision(
            "continue",
            f"the review lowered confidence to {verdict.confidence}%, under the "
            f"{t.exit_confidence}% bar",
        )
    if review.diverges:
        return Decision("continue", "the red team (G5) reached a different conclusion")
    if not verdict.causal_chain_complete:
        return Decision("continue", "no traced root cause (causal_chain_complete is not true)")
    blocking = _blocking(verdict)
    if blocking:
        return Decision("continue", f"gates block the exit: {', '.join(blocking)}")
    auto = verdict.confidence >= t.auto_run_confidence
    if review.severity == "none":
        return Decision("exit_complete", "a clean review pass", auto_run=auto)
    passes = 1
    for earlier in reversed([v for v in history if v.review is not None]):
        if not _minor_pass(earlier, t):
            break
        passes += 1
    if passes < t.minor_review_passes:
        return Decision("continue", "minor issues on a first pass: one more round")
    return Decision("exit_complete", f"{passes} consecutive minor-only passes", auto_run=auto)


def split_actions(
    actions: Sequence[Action],
    confidence: int,
    thresholds: InvestigationThresholds = DEFAULT_THRESHOLDS,
    *,
    completed: bool = True,
) -> tuple[list[Action], list[Action]]:
    """(may auto-run, drafts for the operator): at 95+ the non-destructive actions of a
    ``complete`` investigation, of a kind harness.yaml lets the harness run
    (``auto_run_kinds``), run by themselves; everything else — every action of an
    investigation that ended any other way, every destructive action, every production write
    and every action of another kind — stays a draft."""
    if not completed or confidence < thresholds.auto_run_confidence:
        return [], list(actions)
    auto = [a for a in actions if may_auto_run(a, thresholds)]
    return auto, [a for a in actions if not any(a is b for b in auto)]


def may_auto_run(action: Action, thresholds: InvestigationThresholds) -> bool:
    return (
        not action.destructive
        and action.kind in thresholds.auto_run_kinds
        and action.kind not in thresholds.production_write_kinds
    )
