"""The numbers behind the investigation rules, in one place.

Each field quotes the reference rule it parameterises. The gates and the loop rules read their
numbers from an ``InvestigationThresholds`` and nowhere else; the defaults are the reference's.
``agent-config/harness.yaml`` may override them (unknown keys are an error, typos show).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InvestigationThresholds(BaseModel):
    """Confidence bars, ceilings, force-continue caps and exit budgets of the on-call loop."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exit_confidence: int = Field(70, ge=0, le=100)
    """“Below 70, the loop can't be left.” / “At 70 or above with status: COMPLETE and no
    open_questions, the gate opens to the adversarial review phase.”"""
    auto_run_confidence: int = Field(95, ge=0, le=100)
    """“At 95 or above, the agent may auto-run non-destructive actions … Under 95 those stay as
    drafts for the operator to decide on.”"""
    auto_run_kinds: list[str] = Field(
        default_factory=lambda: ["jira_comment", "jira_transition", "jira_assign"]
    )
    """The kinds of non-destructive action the harness itself runs after a ``complete`` exit
    at ``auto_run_confidence`` or above (#30: "a Jira comment, a status transition or a ticket
    assignment"). Any other kind stays a draft for ``admin: run CASE N``."""
    production_write_kinds: list[str] = Field(default_factory=lambda: ["db_write"])
    """Kinds that write to a production system: never run without the operator confirming
    that one command (``admin: run CASE N --confirm``), whatever the confidence."""
    open_question_penalty: float = Field(0.08, ge=0, le=1)
    """A1: “a hard confidence cap as 1.0, minus 0.08 per open question, minus 0.05 per
    unchecked source”."""
    unchecked_source_penalty: float = Field(0.05, ge=0, le=1)
    """A1: “… minus 0.05 per unchecked source, and whatever Claude writes, the gate clamps the
    number arithmetically”."""
    inferred_only_cap: int = Field(60, ge=0, le=100)
    """EQ1: “root-cause nodes cite hard evidence (anything other than INFERRED) or accept a 60%
    cap”."""
    adversarial_fail_penalty: int = Field(7, ge=0, le=100)
    """P7: “lowers the ceiling by 7% for every adversarial dimension marked FAIL …”."""
    adversarial_floor: int = Field(40, ge=0, le=100)
    """P7: “… down to a floor of 40%”."""
    force_continue_max: int = Field(3, ge=0)
    """CONFIDENCE_FORCE, CAUSAL_CHAIN_FORCE, G_BLOCKER_FORCE: “Up to 3 further iterations are
    forced, and they count inside the 20-iteration budget instead of adding to it”."""
    max_iterations: int = Field(20, ge=1)
    """“oncall_run performs the first investigation, up to 20 reasoning iterations with a
    quality gate”; past it the loop exits ``timeout``."""
    wall_clock_minutes: float = Field(45.0, gt=0)
    """Exit ``timeout`` on the wall clock: the reference names the reason but gives no number
    (its timeout example stops at 18 iterations and 50 min, checked between iterations)."""
    degrading_drop: int = Field(10, ge=0, le=100)
    """“A drop of more than 10% across two consecutive rounds ends the loop with the reason
    degrading” (example: “dropped >15% twice”): two drops in a row, in points of confidence,
    that together exceed this. A round's drop is the smaller of the model's claimed drop and
    the harness's (clamped) drop, so a drop the harness's own ceiling made on an honest report
    (the claim held, a new open question lowered the cap) is no drop."""
    stalled_rounds: int = Field(2, ge=1)
    """Exit ``stalled``: “(two rounds, zero new facts)”; the facts are counted by the harness
    from the reports and the tool results, not taken from the report's ``new_facts``."""
    unreadable_report_rounds: int = Field(2, ge=1)
    """Exit ``failed``: this many rounds in a row without a readable completion report. The
    first one is a guard note saying exactly what was wrong; a model that cannot produce the
    contract after being told is not investigating (the reference names no number)."""
    minor_review_passes: int = Field(2, ge=1)
    """“Two consecutive minor-only passes, or one clean pass, end the loop with complete”."""


DEFAULT_THRESHOLDS = InvestigationThresholds()
