"""The values the gates and the loop rules hand each other: a violation, a decision and the
verdict of one iteration. Plain frozen dataclasses: they are built thousands of times in a
bench and never read from disk (the loop stores ``Verdict.to_json()``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from harness_cli.loop.report import Status

Effect = Literal["clamp", "guard_note", "block_exit", "pin"]
"""What a gate does besides becoming a guard note (every violation does that): ``clamp`` lowers
the ceiling, ``block_exit`` keeps the loop from leaving, ``guard_note`` only informs, ``pin``
(A7) re-attaches text to every prompt and is never a violation."""

Action = Literal[
    "continue",
    "review",
    "exit_complete",
    "exit_blocked",
    "exit_stalled",
    "exit_degrading",
    "exit_timeout",
    "exit_failed",
    "exit_budget",
]
"""``continue``: another investigation iteration, with the guard notes at the head of its
prompt. ``review``: ready for the adversarial (D1-D15) and red-team (G5) reviews. ``exit_*``:
the loop ends with that reason — the reference's five honest ways to end (complete, blocked,
stalled, degrading, timeout), and a sixth the harness adds in the same exit-line shape:
``failed``, the run could not investigate (the model unreachable, its credentials refused, or
no readable completion report round after round), with the real cause as the line's note; and
``budget``: a spending limit (``cost.budgets``) was reached before the next model call (exit
code 4, what was spent as the note)."""

ForceRule = Literal["CONFIDENCE_FORCE", "CAUSAL_CHAIN_FORCE", "G_BLOCKER_FORCE"]
Severity = Literal["critical", "minor", "none"]


@dataclass(frozen=True)
class Violation:
    code: str
    message: str
    effect: Effect

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "effect": self.effect}

    def note(self) -> str:
        return f"[{self.code}] {self.message}"


@dataclass(frozen=True)
class ReviewSummary:
    """What the loop rules need from a review verdict."""

    severity: Severity
    failed: tuple[str, ...]
    """FAIL dimensions, e.g. ("D2", "D7"): P7 lowers the ceiling per item."""
    diverges: bool
    """The red team (G5) reached a different conclusion."""


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    """One line for the operator and the log."""
    force: ForceRule | None = None
    """The force-continue rule that overruled an exit signal this round, if any."""
    notes: tuple[str, ...] = ()
    """Guard notes the rules add (force notes) on top of the gate violations."""
    auto_run: bool = False
    """Confidence at or above the auto-run bar: non-destructive actions may run by themselves."""
    exit_note: str | None = None
    """The parenthesised note of the exit line, e.g. "two rounds, zero new facts"."""
    exit_code: int = 0
    """The subcommand's exit code for this exit: non-zero only for a run that could not
    investigate (``exit_failed``: 1, or 2 when the model's credentials were refused)."""

    @property
    def is_exit(self) -> bool:
        return self.action.startswith("exit_")

    @property
    def exit_reason(self) -> str | None:
        return self.action.removeprefix("exit_") if self.is_exit else None


@dataclass(frozen=True)
class Verdict:
    """One evaluated iteration (or one evaluated review of it)."""

    ceiling: int
    """The cap after A1, EQ1, G1 and P7, in percent."""
    confidence: int
    """The claimed confidence clamped to ``ceiling``: the harness's number."""
    claimed_confidence: int
    violations: tuple[Violation, ...]
    status: Status
    open_questions: int
    new_facts: int
    """Facts the harness found new in this round (``evidence.new_fact_count``), not the
    length of the report's own ``new_facts`` list."""
    causal_chain_complete: bool
    report_ok: bool = True
    """False when no valid completion report was found (confidence carried forward)."""
    review: ReviewSummary | None = None
    decision: Decision | None = None

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(v.code for v in self.violations)

    def to_json(self) -> dict[str, Any]:
        """CONTRACT §4: exactly ``ceiling``, ``confidence``, ``violations`` and ``decision``."""
        return {
            "ceiling": self.ceiling,
            "confidence": self.confidence,
            "violations": [v.to_json() for v in self.violations],
            "decision": self.decision.action if self.decision else None,
        }
