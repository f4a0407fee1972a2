"""consolidate_trigger: does this case need a consolidation now? Pure: files in, a decision out.

"A separate service, consolidate_trigger, checks each turn for four signals: a commit SHA or a
decision verb in the transcript, a review thread that just closed, a case workspace with over
5KB of accumulated transcript, or at least an hour since the last consolidation. Any single
signal triggers it." Checked after every followup turn and by ``consolidate --due``; when none
fires, no model is called.

Nothing fires without something to consolidate (no unconsolidated transcript), nor during the
quiet period after a refused consolidation (the same proposal would be refused again, and the
operator was already told; ``consolidate CASE --force`` does not wait).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from harness_cli.memory.state import MemoryState
from harness_cli.memory.thresholds import MemoryThresholds
from harness_cli.memory.transcripts import Transcript
from harness_cli.workspace.case import Case

SIGNALS = ("commit_or_decision", "review_thread_closed", "transcript_bytes", "elapsed")
REVIEW_CLOSED_KINDS = frozenset(
    {"review_thread_closed", "review_resolved", "mr_merged", "mr_closed"}
)
"""Trigger kinds (of a dispatch payload) that say a review thread just closed."""
_REVIEW_CLOSED_STATUSES = frozenset({"merged", "closed"})
# A commit SHA: 7-40 lowercase hex digits with at least one digit and one letter, so neither
# a word like "defaced" nor a Slack ts or a number passes for one.
_SHA = re.compile(
    r"(?<![0-9A-Za-z])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9A-Za-z])"
)


@dataclass
class TriggerCheck:
    fired: list[str] = field(default_factory=list)
    """The signals that fired, in ``SIGNALS`` order."""
    reasons: list[str] = field(default_factory=list)
    """One line per fired signal, or why nothing could fire."""
    pending: list[Transcript] = field(default_factory=list)

    @property
    def fires(self) -> bool:
        return bool(self.fired)


def decision_pattern(verbs: list[str]) -> re.Pattern[str]:
    words = sorted((v.strip() for v in verbs if v.strip()), key=len, reverse=True)
    body = "|".join(r"\s+".join(map(re.escape, w.split())) for w in words) or r"(?!x)x"
    return re.compile(rf"\b(?:{body})\b", re.IGNORECASE)


def _since(state: MemoryState, pending: list[Transcript]) -> datetime | None:
    if state.last_consolidated_at is not None:
        return state.last_consolidated_at
    stamps = [t.meta.at for t in pending if t.meta.at is not None]
    return min(stamps) if stamps else None


def evaluate(
    limits: MemoryThresholds,
    *,
    now: datetime,
    state: MemoryState,
    pending: list[Transcript],
    case: Case | None = None,
    trigger_kind: str | None = None,
    force: bool = False,
) -> TriggerCheck:
    check = TriggerCheck(pending=list(pending))
    if not pending:
        check.reasons.append("nothing to consolidate: no unconsolidated transcript")
        return check
    quiet = timedelta(minutes=limits.consolidate_after_minutes)
    if not force and state.last_refused_at is not None and now - state.last_refused_at < quiet:
        until = (state.last_refused_at + quiet).isoformat()
        check.reasons.append(f"quiet after a refused consolidation until {until}")
        return check

    text = "\n".join(t.body for t in pending)
    sha = _SHA.search(text)
    verb = decision_pattern(limits.decision_verbs).search(text)
    found = (
        f"commit {sha.group(0)}"
        if sha is not None
        else f"decision verb {verb.group(0)!r}"
        if verb is not None
        else ""
    )
    if found:
        check.fired.append("commit_or_decision")
        check.reasons.append(f"{found} in the new transcript")

    since = _since(state, pending)
    closed = trigger_kind in REVIEW_CLOSED_KINDS
    if not closed and case is not None:
        closed = any(
            t.to in _REVIEW_CLOSED_STATUSES and (since is None or t.at > since)
            for t in case.history
        )
    if closed:
        check.fired.append("review_thread_closed")
        check.reasons.append(f"a review thread just closed ({trigger_kind or 'case history'})")

    size = sum(t.size for t in pending)
    if size > limits.consolidate_transcript_bytes:
        check.fired.append("transcript_bytes")
        check.reasons.append(
            f"{size} B of unconsolidated transcript > {limits.consolidate_transcript_bytes} B"
        )

    if since is not None and now - since >= quiet:
        minutes = int((now - since).total_seconds() // 60)
        check.fired.append("elapsed")
        check.reasons.append(f"{minutes} min since the last consolidation")
    if not check.fired:
        check.reasons.append("no signal fired")
    return check
