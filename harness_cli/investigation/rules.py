"""What happens after a verdict: the confidence rules, the three force-continue rules, the five
exits, and the exit line. Pure functions over the history of verdicts (oldest first; review
verdicts sit in it too, right after the iteration they reviewed).

Confidence rules (thresholds from ``InvestigationThresholds``):
  * under 70 the loop cannot be left through COMPLETE;
  * 70+ with COMPLETE and no open questions (and no blocking gate) → ``review``;
  * 95+ → non-destructive actions may auto-run, else they stay drafts for the operator;
  * a drop of more than 10 points from one round to the next → ``exit_degrading``. A drop made
    by a review (P7, the 90 → 65 incident) is not degradation: it sends the loop back, and the
    lowered number becomes the baseline for the next round.
Force-continue: CONFIDENCE_FORCE, CAUSAL_CHAIN_FORCE, G_BLOCKER_FORCE overrule an exit signal at
most 3 times each, inside the 20-iteration budget. Once CAUSAL_CHAIN_FORCE is spent, A5 stops
blocking (the reviewers judge the chain); once G_BLOCKER_FORCE is spent, BLOCKED is honoured;
once CONFIDENCE_FORCE is spent, the loop exits ``blocked``: it cannot leave as complete under
the bar, and an operator has to decide.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_cli.investigation.report import Action
from harness_cli.investigation.thresholds import DEFAULT_THRESHOLDS, InvestigationThresholds
from harness_cli.investigation.verdict import Decision, ForceRule, ReviewSummary, Verdict

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
    drop; then the decision its status calls for (review, force-continue, or the complete and
    blocked exits); then the wall clock; then, for a ``continue``, stalled and the iteration
    budget (so forced rounds count inside it)."""
    t = thresholds
    degrading = _degrading(history, verdict, t)
    if degrading is not None:
        return degrading
    natural = _natural(history, verdict, t)
    if natural.is_exit:
        return natural
    if elapsed_seconds is not None and elapsed_seconds >= t.wall_clock_minutes * 60:
        return Decision("exit_timeout", f"wall clock of {t.wall_clock_minutes:g} min used up")
    if natural.action == "continue":
        if _stalled(history, verdict, t):
            return Decision(
                "exit_stalled",
                f"{t.stalled_rounds} rounds in a row with zero new facts",
                exit_note=EXIT_NOTES["stalled"],
            )
        if iterations(history, verdict) >= t.max_iterations:
            return Decision("exit_timeout", f"iteration budget of {t.max_iterations} used up")
    return natural


def _degrading(
    history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds
) -> Decision | None:
    if not history or verdict.review is not None or not verdict.report_ok:
        return None
    before, now = history[-1].confidence, verdict.confidence
    if before - now <= t.degrading_drop:
        return None
    return Decision(
        "exit_degrading",
        f"confidence dropped {before}% → {now}% in one round (more than {t.degrading_drop} "
        "points): the investigation is going backwards",
        exit_note=f"dropped {before}%→{now}%",
    )


def _stalled(history: Sequence[Verdict], verdict: Verdict, t: InvestigationThresholds) -> bool:
    if verdict.review is not None:
        return False
    window = [*(v for v in history if v.review is None), verdict][-t.stalled_rounds :]
    return len(window) >= t.stalled_rounds and all(v.new_facts == 0 for v in window)


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
        if "G4" in verdict.codes:
            forced = _force(
                history, "G_BLOCKER_FORCE", t,
                "you declared BLOCKED while reachable sources were skipped or declared "
                "unavailable by inference (G4): query them, or record the real error each "
                "returned.",
            )  # fmt: skip
            if forced is not None:
                return forced
        return Decision(
            "exit_blocked", "blocked: a human has to clear it", exit_note=EXIT_NOTES["blocked"]
        )
    if verdict.open_questions:
        return Decision(
            "continue",
            f"COMPLETE with {verdict.open_questions} open question(s): answer or drop them",
            notes=("[COMPLETE] you declared COMPLETE with open questions: answer each one or "
                   "explain why it no longer matters and remove it.",),
        )  # fmt: skip
    if verdict.confidence < t.exit_confidence:
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
    if not verdict.causal_chain_complete:
        forced = _force(
            history, "CAUSAL_CHAIN_FORCE", t,
            f"you declared COMPLETE at {verdict.confidence}% but causal_chain_complete is not "
            "true: a symptom-level finding. Trace the chain from trigger to symptom.",
        )  # fmt: skip
        if forced is not None:
            return forced
    blocking = _blocking(verdict)
    if blocking:
        return Decision("continue", f"gates block the exit: {', '.join(blocking)}")
    return Decision("review", "ready for the adversarial and red-team reviews")


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
        and not _blocking(verdict)
    )


def _after_review(
    history: Sequence[Verdict], verdict: Verdict, review: ReviewSummary, t: InvestigationThresholds
) -> Decision:
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
) -> tuple[list[Action], list[Action]]:
    """(may auto-run, drafts for the operator): at 95+ the non-destructive actions may run by
    themselves; everything else, and every destructive action, stays a draft."""
    if confidence < thresholds.auto_run_confidence:
        return [], list(actions)
    return [a for a in actions if not a.destructive], [a for a in actions if a.destructive]


def exit_line(
    reason: str,
    confidence: int,
    iterations: int,
    elapsed_seconds: float,
    note: str | None = None,
) -> str:
    """The reference's shape, columns at 0, 20, 36, 51 and 67:
    ``exit=complete       confidence=89%  iterations=12  elapsed=13min``."""
    minutes = max(0, round(elapsed_seconds / 60))
    cells = [
        _cell(f"exit={reason}", 20),
        _cell(f"confidence={confidence}%", 16),
        _cell(f"iterations={iterations}", 15),
    ]
    elapsed = f"elapsed={minutes}min"
    if not note:
        return "".join(cells) + elapsed
    return "".join(cells) + _cell(elapsed, 16) + f"({note})"


def _cell(text: str, width: int) -> str:
    return text.ljust(width) if len(text) < width else text + " "


def trajectory(history: Sequence[Verdict]) -> str:
    """The confidence sparkline of ANALYSIS.md, one point per iteration: ``45% → 62% → 78%``."""
    return " → ".join(f"{v.confidence}%" for v in history if v.review is None and v.report_ok)
