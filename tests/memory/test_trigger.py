"""consolidate_trigger on its own (L0/L1: transcripts in a temp folder, no model): each of the
four signals fires alone; nothing fires without them, without anything to consolidate, or in
the quiet period after a refusal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness_cli.memory.state import MemoryState
from harness_cli.memory.thresholds import MemoryThresholds
from harness_cli.memory.transcripts import Transcript, TranscriptMeta, list_all, write
from harness_cli.memory.trigger import evaluate
from harness_cli.workspace.case import Case

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
QUIET = "Is the threshold a constant? Thanks, looking at it now."
LIMITS = MemoryThresholds()


def _pending(
    folder: Path, *bodies: str, at: datetime = NOW - timedelta(minutes=5)
) -> list[Transcript]:
    for body in bodies:
        write(folder, TranscriptMeta(case_id="AAA-1", at=at), body)
    return list_all(folder)


def _recent() -> MemoryState:
    return MemoryState(last_consolidated_at=NOW - timedelta(minutes=10))


@pytest.mark.parametrize(
    ("body", "signal"),
    [
        ("Pushed 3f2a9c1 to the branch, please look.", "commit_or_decision"),
        ("The fix landed as 9b8e7d6c5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d.", "commit_or_decision"),
        ("OK, we agreed: only the comparison changes.", "commit_or_decision"),
        ("Let's go with the >= fix.", "commit_or_decision"),
        ("lorem ipsum dolor sit amet " * 200, "transcript_bytes"),
    ],
)
def test_a_signal_in_the_new_transcript_fires_alone(tmp_path: Path, body: str, signal: str) -> None:
    check = evaluate(LIMITS, now=NOW, state=_recent(), pending=_pending(tmp_path, body))
    assert check.fired == [signal], check.reasons


def test_an_hour_since_the_last_consolidation_fires_alone(tmp_path: Path) -> None:
    pending = _pending(tmp_path, QUIET)
    state = MemoryState(last_consolidated_at=NOW - timedelta(minutes=60))
    assert evaluate(LIMITS, now=NOW, state=state, pending=pending).fired == ["elapsed"]
    state.last_consolidated_at = NOW - timedelta(minutes=59)
    assert evaluate(LIMITS, now=NOW, state=state, pending=pending).fired == []


def test_a_never_consolidated_case_counts_from_its_oldest_transcript(tmp_path: Path) -> None:
    pending = _pending(tmp_path, QUIET, at=NOW - timedelta(minutes=61))
    assert evaluate(LIMITS, now=NOW, state=MemoryState(), pending=pending).fired == ["elapsed"]


def test_a_review_thread_that_just_closed_fires_alone(tmp_path: Path) -> None:
    pending = _pending(tmp_path, QUIET)
    kind = evaluate(LIMITS, now=NOW, state=_recent(), pending=pending,
                    trigger_kind="review_thread_closed")  # fmt: skip
    assert kind.fired == ["review_thread_closed"]
    case = Case(id="AAA-1", project="team-a", created_at=NOW, updated_at=NOW, status="mr_open")
    case.move("merged")
    recent = MemoryState(last_consolidated_at=case.history[-1].at - timedelta(minutes=1))
    merged = evaluate(LIMITS, now=case.history[-1].at, state=recent, pending=pending, case=case)
    assert merged.fired == ["review_thread_closed"]
    # a merge before the last consolidation is old news
    before = MemoryState(last_consolidated_at=case.history[-1].at + timedelta(minutes=1))
    old = evaluate(LIMITS, now=case.history[-1].at, state=before, pending=pending, case=case)
    assert old.fired == []


def test_none_fires_on_a_quiet_recent_transcript(tmp_path: Path) -> None:
    check = evaluate(LIMITS, now=NOW, state=_recent(), pending=_pending(tmp_path, QUIET))
    assert not check.fires and check.reasons == ["no signal fired"]


@pytest.mark.parametrize(
    "body",
    [
        "Slack ts 1764417600.123456 and order 1234567 are numbers, not commits.",
        "The page was defaced, then decaffed; a facade.",
        "DEADBEEF1 in capitals is not how git prints a SHA.",
    ],
)
def test_no_false_commit_sha(tmp_path: Path, body: str) -> None:
    check = evaluate(LIMITS, now=NOW, state=_recent(), pending=_pending(tmp_path, body))
    assert check.fired == [], check.reasons


def test_nothing_to_consolidate_never_fires(tmp_path: Path) -> None:
    state = MemoryState(last_consolidated_at=NOW - timedelta(days=3))
    check = evaluate(LIMITS, now=NOW, state=state, pending=[], trigger_kind="mr_merged")
    assert not check.fires and "nothing to consolidate" in check.reasons[0]


def test_quiet_after_a_refusal_unless_forced(tmp_path: Path) -> None:
    pending = _pending(tmp_path, "we decided: 3f2a9c1 it is")
    state = MemoryState(last_refused_at=NOW - timedelta(minutes=10))
    assert not evaluate(LIMITS, now=NOW, state=state, pending=pending).fires
    assert evaluate(LIMITS, now=NOW, state=state, pending=pending, force=True).fires
    state.last_refused_at = NOW - timedelta(minutes=61)
    assert evaluate(LIMITS, now=NOW, state=state, pending=pending).fires


def test_decision_verbs_come_from_the_thresholds(tmp_path: Path) -> None:
    pending = _pending(tmp_path, "Final answer: we settle on >=.")
    assert not evaluate(LIMITS, now=NOW, state=_recent(), pending=pending).fires
    custom = MemoryThresholds(decision_verbs=["settle on"])
    assert evaluate(custom, now=NOW, state=_recent(), pending=pending).fired == [
        "commit_or_decision"
    ]
