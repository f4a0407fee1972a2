"""The numbers behind mr-monitor's rules (reference, Layer 1 and Layer 4), in one place.

Wired into ``harness.yaml`` as ``mr_monitor:`` (``HarnessConfig.mr_monitor``); until then, and
for any config that leaves the section out, the defaults below are the reference's.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MonitorThresholds(BaseModel):
    """Budgets of the self-repairing MR loops: "each has a retry budget and can recognize what
    it already did"."""

    model_config = ConfigDict(extra="forbid")

    fix_ci_max_consecutive: int = Field(3, ge=1)
    """"CI auto-fix is capped per MR, so three consecutive failures escalate to the operator."
    Red pipelines that got a fix attempt, in a row; a green pipeline resets the count. The next
    red one after the cap gets one escalation DM and no further automatic fix until the
    operator acts (``admin: mr rescan|resume``). The same cap bounds the push recovery
    dispatched for ``conflict``/``need_rebase``."""
    cycle_budget_seconds: float = Field(60.0, gt=0)
    """One cycle stops starting new MRs after this long (rate-limit waits included) and ends
    with its cursors where they were, so the next cycle resumes without skipping anything."""
    gitlab_max_retries: int = Field(3, ge=0)
    """python-gitlab's ``max_retries`` for 429 (Retry-After / RateLimit-Reset honoured) and
    transient 5xx, per call, for the client ``wiring.gitlab()`` builds for
    mr-monitor (python-gitlab takes it per request, not in ``Gitlab()``; its default is 10).
    Whatever the bound, a call still refused after it ends the cycle: no retry storms."""
    max_errors_per_cycle: int = Field(3, ge=1)
    """GitLab errors (other than 404) tolerated in one cycle before it ends early; each failed
    MR is retried next cycle because its cursor did not move."""
    cursor_lag_seconds: float = Field(10.0, ge=0)
    """The per-project ``updated_after`` cursor stays this far behind the newest ``updated_at``
    seen, for updates whose transaction committed after a later one was listed. It costs no
    extra calls: re-listed MRs whose ``updated_at`` was already handled are skipped by value."""
    stale_recheck_hours: float = Field(6.0, gt=0)
    """An open MR not examined for this long is examined anyway: a conflicting push to its
    target branch changes ``detailed_merge_status`` without touching the MR's ``updated_at``."""
    stale_recheck_per_cycle: int = Field(3, ge=0)
    """At most this many stale MRs (oldest first) per cycle, so 100 idle MRs never cost 100
    calls in one cycle."""
    drop_after_not_found_cycles: int = Field(3, ge=1)
    """An MR (or a whole project) GitLab answers 404 for is dropped after this many cycles in a
    row, and the operator told once; until then it is re-read every cycle. One 404 can be a
    blip (a proxy, a token's permissions being changed), and dropping on it lost MRs for good;
    never dropping brought back the dead-cursor storm of "12 retries per cycle for hours"."""
    trace_tail_lines: int = Field(40, ge=1)
    """Lines of the failed job's log quoted in the escalation DM (the whole log is in the
    case's ``ci/`` folder)."""
    review_round_budget: int = Field(4, ge=1)
    """"A bot-vs-bot review loop (another agent reviewing ours) would run for ever": at most
    this many address_review rounds per MR within ``review_round_window_hours`` — "a few
    rounds per day". Past it the harness stops replying, says so once on the MR and DMs the
    operator once; the notes are held (never dropped) until the window frees a round or the
    operator asks (``admin: mr rescan``)."""
    review_round_ceiling: int = Field(12, ge=1)
    """#34 item 14: the budget above counts only the rounds shaped like a loop — a reviewer
    writing again after the harness's own reply in that discussion. An ordinary review of ten
    notes, each answered in its own round, went half unanswered when every round counted. This
    ceiling counts every round, for a reviewer bot that opens a new discussion each time."""
    review_round_window_hours: float = Field(24.0, gt=0)
    """The window the review round budget counts in."""
    ignored_authors: list[str] = Field(default_factory=list)
    """GitLab usernames whose notes never trigger a reply (other bots, linters, bridges), on top
    of the harness's own account, system notes and bot-named accounts — "reviewers who are not
    humans don't start reply loops with each other"."""


def thresholds_from(harness_config: Any) -> MonitorThresholds:
    """``harness.yaml``'s ``monitor:`` section (defaults when it is absent)."""
    configured = getattr(harness_config, "monitor", None)
    return configured if isinstance(configured, MonitorThresholds) else MonitorThresholds()
