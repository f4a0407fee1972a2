"""mr-monitor's decisions, as pure functions of what GitLab said and what the monitor remembers.

No I/O here: who counts as a reviewer, which discussions still want a reply, what a head
pipeline means for the fix-ci loop, and whether the MR needs the push recovery. The loops'
budgets come from :class:`~harness_cli.delivery.monitor.thresholds.MonitorThresholds`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from harness_cli.services.gitlab import Discussion, Note
from harness_cli.state.models import MonitoredMr

ACTIVE_PIPELINE = frozenset({"created", "waiting_for_resource", "preparing", "pending", "running"})
"""Head pipeline statuses that will change by themselves: the MR is re-read next cycle."""
RECOVER_STATUSES = frozenset({"conflict", "need_rebase"})
"""``detailed_merge_status`` values that call for the push recovery (L1 rebase → L2 → L3)
instead of a CI fix: no CI fix can make a conflicting branch mergeable."""
TRANSIENT_MERGE_STATUSES = frozenset({"checking", "unchecked", "preparing", "approvals_syncing"})
"""GitLab is still computing mergeability: read again next cycle, decide nothing yet."""

_BOT_NAME = re.compile(
    r"(^(project|group)_\d+_bot)|([-_.]bot\d*$)|(\[bot\]$)|(^ghost$)", re.IGNORECASE
)
"""GitLab's project/group access-token users (``project_12_bot_…``), ``*-bot`` service
accounts, ``[bot]`` apps and the ``ghost`` placeholder of deleted users."""


def is_reviewer_note(note: Note, *, me: str, ignored: Iterable[str] = ()) -> bool:
    """A note a human reviewer wrote: not a system note, not the harness's own, not a bot's.
    "Reviewers who are not humans don't start reply loops with each other." """
    if note.system or not note.author or note.author == me:
        return False
    if note.author in set(ignored):
        return False
    return not _BOT_NAME.search(note.author)


@dataclass(frozen=True)
class ReviewWork:
    """A discussion whose newest reviewer note has no reply from the harness yet."""

    discussion_id: str
    note_id: int
    author: str
    follows_reply: bool = False
    """The reviewer wrote again after the harness's own reply in this discussion: the shape of
    a reply loop, the only kind of round the review round budget counts (#34 item 14)."""


def discussions_to_answer(
    discussions: Iterable[Discussion],
    *,
    me: str,
    handled: dict[str, int],
    ignored: Iterable[str] = (),
) -> list[ReviewWork]:
    """Reviewer auto-reply "dedupes by author, which means that when the bot's latest note in
    a discussion is newer than the reviewer's, the loop stays quiet because the reply already
    exists". ``handled`` (discussion → newest reviewer note already dispatched) keeps a reply
    that is still being written from being asked for twice. Resolved threads want nothing."""
    ignored = set(ignored)
    work: list[ReviewWork] = []
    for discussion in discussions:
        if discussion.resolved:
            continue
        reviewer = [n for n in discussion.notes if is_reviewer_note(n, me=me, ignored=ignored)]
        if not reviewer:
            continue
        newest = max(reviewer, key=lambda n: n.id)
        ours = [n.id for n in discussion.notes if n.author == me and not n.system]
        if ours and max(ours) > newest.id:
            continue
        if handled.get(discussion.id, 0) >= newest.id:
            continue
        work.append(ReviewWork(discussion.id, newest.id, newest.author, follows_reply=bool(ours)))
    return work


CiVerdict = Literal["none", "running", "seen", "green", "other", "not_new", "fix", "escalate"]


def ci_verdict(
    entry: MonitoredMr,
    pipeline: dict[str, Any] | None,
    *,
    max_consecutive: int,
    retry_noop: bool = False,
) -> CiVerdict:
    """What the head pipeline means for the fix-ci loop.

    - ``seen``: this pipeline was acted on already ("a pipeline id already handled is never
      dispatched again");
    - ``not_new``: red on the sha the last fix attempt was for — a retry, or a fix run that
      pushed nothing — "is not a new failure" (the 80 no-op "fix CI" commits);
    - ``fix`` while fewer than ``max_consecutive`` attempts ran in a row, then ``escalate``
      ("three consecutive failures escalate to the operator").

    ``retry_noop``: the last attempt on this very pipeline changed nothing. "A no-op CI fix
    counts as a failed attempt toward the 3": the same red pipeline is fixed again, or
    escalated once the attempts are spent — never left red in silence.
    """
    if not pipeline:
        return "none"
    status = str(pipeline.get("status") or "")
    if status in ACTIVE_PIPELINE:
        return "running"
    if retry_noop and status == "failed":
        return "escalate" if entry.fix_ci_attempts >= max_consecutive else "fix"
    if int(pipeline.get("id") or 0) == entry.last_pipeline_id:
        return "seen"
    if status == "success":
        return "green"
    if status != "failed":
        return "other"
    sha = str(pipeline.get("sha") or "")
    if sha and sha == entry.last_fix_sha:
        return "not_new"
    if entry.fix_ci_attempts >= max_consecutive:
        return "escalate"
    return "fix"


RecoverVerdict = Literal["none", "wait", "seen", "recover", "escalate"]


def recover_verdict(
    entry: MonitoredMr,
    merge_status: str,
    sha: str,
    *,
    max_consecutive: int,
    has_conflicts: bool = False,
) -> RecoverVerdict:
    """``conflict`` / ``need_rebase`` (or ``has_conflicts``) → the push recovery, once per MR
    sha, at most ``max_consecutive`` times in a row before the operator is asked."""
    if merge_status in TRANSIENT_MERGE_STATUSES and not has_conflicts:
        return "wait"
    if merge_status not in RECOVER_STATUSES and not has_conflicts:
        return "none"
    if sha and sha == entry.last_recover_sha:
        return "seen"
    if entry.recover_attempts >= max_consecutive:
        return "escalate"
    return "recover"


def failed_job(jobs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The job whose log the fix run gets: the first failed job that was not retried (and,
    failing that, any failed one)."""
    failed = [j for j in jobs if j.get("status") == "failed"]
    current = [j for j in failed if not j.get("retried")]
    chosen = current or failed
    return min(chosen, key=lambda j: int(j.get("id") or 0)) if chosen else None


def tail(text: str, lines: int) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def review_round_allowed(
    entry: MonitoredMr,
    now: datetime,
    *,
    budget: int,
    window_hours: float,
    ceiling: int | None = None,
    loop: bool = True,
) -> bool:
    """Whether another address_review round fits the MR's review round budget: ``budget``
    counts the loop-shaped rounds (``loop``: this round would be one), ``ceiling`` every
    round."""
    since = now - timedelta(hours=window_hours)
    if ceiling is not None and len([t for t in entry.review_rounds if t > since]) >= ceiling:
        return False
    return not loop or len([t for t in entry.loop_rounds if t > since]) < budget


def rounds_in_window(
    entry: MonitoredMr, now: datetime, window_hours: float, *, loops: bool = False
) -> list[datetime]:
    since = now - timedelta(hours=window_hours)
    return sorted(t for t in (entry.loop_rounds if loops else entry.review_rounds) if t > since)


def touched_by_pipelines(
    entries: Iterable[tuple[str, MonitoredMr]], pipelines: Iterable[dict[str, Any]]
) -> list[str]:
    """MRs whose head pipeline is new or changed in a pipeline listing: a re-run (a new
    pipeline on the same sha), a retry, a pipeline that finished — none touches the MR."""
    found: list[str] = []
    pipelines = list(pipelines)
    for key, entry in entries:
        refs = {entry.source_branch, f"refs/merge-requests/{entry.iid}/head"}
        for p in pipelines:
            if str(p.get("ref") or "") not in refs:
                continue
            if entry.last_sha and str(p.get("sha") or "") != entry.last_sha:
                continue  # an older sha's pipeline, or a push (which touches the MR anyway)
            if (
                int(p.get("id") or 0) != entry.head_pipeline_id
                or str(p.get("status") or "") != entry.ci_status
            ):
                found.append(key)
                break
    return found
