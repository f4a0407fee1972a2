"""The numbers behind the memory rules (reference, Layer 2 "case_followup" and Layer 3 "memory
consolidation"), in one place.

Wired into ``harness.yaml`` as ``memory:`` (``HarnessConfig.memory``); until then, and for any
config that leaves the section out, the defaults below are the reference's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_DECISION_VERBS = (
    "decided",
    "decide",
    "decision",
    "agreed",
    "approved",
    "confirmed",
    "rejected",
    "go with",
    "going with",
    "merged",
    "ship it",
)


class MemoryThresholds(BaseModel):
    """Budgets and signals of the followup agent and of memory consolidation."""

    model_config = ConfigDict(extra="forbid")

    gap_analyzer_every_replies: int = Field(5, ge=1)
    """case_followup "also calls gap_analyzer as a sub-agent every N replies": N. Counted over
    the replies the followup answered (operator and ticket replies alike) since the last gap
    analysis."""
    consolidate_transcript_bytes: int = Field(5120, ge=1)
    """consolidate_trigger: "a case workspace with over 5KB of accumulated transcript" — bytes
    of followup transcripts not yet consolidated; strictly more than this fires."""
    consolidate_after_minutes: float = Field(60.0, gt=0)
    """consolidate_trigger: "at least an hour since the last consolidation" (for a case never
    consolidated: since its oldest unconsolidated transcript). Also the quiet period after a
    refused consolidation, during which no automatic trigger fires again."""
    decision_verbs: list[str] = Field(default_factory=lambda: list(DEFAULT_DECISION_VERBS))
    """consolidate_trigger: "a commit SHA or a decision verb in the transcript" — the verbs
    (whole words or phrases, any case) that mark a decision."""
    output_size_guard_ratio: float = Field(0.5, gt=0, le=1)
    """"An output-size guard that refuses writes below 50% of the input size": a proposed
    TASK.md smaller than this share of the TASK.md it would replace is refused, logged, and
    the operator told; the old TASK.md stays. The input is the document being rewritten — the
    incident shrank a 14 KB TASK.md to 587 bytes."""
    consolidate_input_budget_chars: int = Field(120_000, ge=1000)
    """At most this many characters of transcripts go to one consolidation, oldest first; the
    rest stay unconsolidated for the next run (their bytes keep the trigger firing)."""
    followup_prompt_budget_chars: int = Field(48_000, ge=2000)
    """The followup prompt (template, ticket, TASK.md, ANALYSIS.md, transcripts since the last
    consolidation, the new replies) never exceeds this. Consolidation keeps it small; when it
    has not caught up, the oldest unconsolidated transcripts are left out and named instead,
    so the agent can read them from the case folder."""
    followup_max_rounds: int = Field(3, ge=1)
    """Replies that arrive while the followup is answering are answered in the same run, up to
    this many rounds (a second followup dispatched meanwhile exits 3 on the workflow lock)."""
    followup_read_attempts: int = Field(3, ge=1)
    """Reads of the thread until the reply that triggered the run is visible (Slack's replies
    lag by up to 30 s, like conversations.history)."""
    followup_read_wait_seconds: float = Field(2.0, ge=0)
    """Wait between those reads."""
    answer_max_chars: int = Field(12_000, ge=500)
    """A longer answer is cut in Slack (the transcript keeps all of it)."""
    model_timeout_seconds: float = Field(600.0, gt=0)
    """Wall clock of one followup, gap-analyzer or consolidator run."""
    model_max_turns: int = Field(12, ge=1)
    """Tool turns of one such run (they may read the case folder, never write)."""


def thresholds_from(harness_config: Any) -> MemoryThresholds:
    """``harness.yaml``'s ``memory:`` section (defaults when it is absent)."""
    configured = getattr(harness_config, "memory", None)
    return configured if isinstance(configured, MemoryThresholds) else MemoryThresholds()
