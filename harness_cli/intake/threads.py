"""Polling the live threads: fair under a budget, and evicting only what is really gone.

- *Fair polling.* A cycle polls at most ``poll_thread_budget`` threads and a 429 past the cycle
  budget ends it early; either way the next cycle starts where this one stopped
  (``slack-cursors.json: threads_next``), so every live thread is polled within
  ``live threads / budget`` cycles instead of the oldest ones every time.
- *Dead-thread storms* (reference Layer 1): a thread whose parent is deleted costs a call per
  cycle for ever, so a thread answering ``thread_not_found`` is evicted — but Slack also says
  it for a parent still lagging and, now and then, for nothing. So: evicted at once when the
  parent is also gone from history and older than the read-lag window; otherwise only after
  ``thread_gone_confirmations`` answers in a row, across cycles. Evicting a thread of an open
  case is said to the operator, never done silently.
- *Admin threads.* The thread under each admin command is read for ``admin_thread_hours``, so
  a command typed as a reply under the harness's answer is obeyed.

Thread-map changes of a cycle (where each thread's reading stands) are written once, at its
end: a crash loses only positions, which the dedup ledger makes harmless.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from harness_cli.approval import approval_reaction
from harness_cli.errors import HarnessError, ServiceError
from harness_cli.intake.context import BudgetExhausted, Intake
from harness_cli.logs import event
from harness_cli.outbox.notify import dm
from harness_cli.outbox.outbound import is_own_post
from harness_cli.services.slack import ThreadGone
from harness_cli.state import files
from harness_cli.state.models import ThreadEntry, ThreadMap
from harness_cli.workspace import registry

log = logging.getLogger("harness.poll")


def live_threads(ctx: Intake) -> list[ThreadEntry]:
    """Threads that can have new activity (not closed, not evicted; admin threads while
    young), in a stable order: by map key."""
    found: dict[str, ThreadEntry] = {}
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        for key, entry in handle.read().threads.items():
            if not entry.closed and not entry.evicted:
                found.setdefault(key, entry)
    horizon = time.time() - ctx.cfg.harness.thresholds.admin_thread_hours * 3600
    for key, entry in files.slack_cursors().read().admin_threads.items():
        if not entry.evicted and _ts(entry.thread_ts) >= horizon:
            found.setdefault(key, entry)
    return [found[k] for k in sorted(found)]


def read_start(ctx: Intake, entry: ThreadEntry) -> str:
    """The ``oldest`` of the thread's next read: the lag window behind the newest reply seen."""
    if not entry.last_seen_ts:
        return entry.thread_ts
    behind = _ts(entry.last_seen_ts) - ctx.cfg.harness.thresholds.read_lag_window_seconds
    return f"{max(_ts(entry.thread_ts), behind):.6f}"


def track_admin(ctx: Intake, ts: str) -> None:
    """Read the thread under this admin command for a while (and forget old ones)."""
    horizon = time.time() - ctx.cfg.harness.thresholds.admin_thread_hours * 3600
    key = ThreadMap.key(ctx.self_dm, ts)
    with files.slack_cursors().update() as state:
        state.admin_threads = {
            k: e for k, e in state.admin_threads.items() if _ts(e.thread_ts) >= horizon
        }
        state.admin_threads.setdefault(
            key,
            ThreadEntry(channel=ctx.self_dm, thread_ts=ts, case_id="", case_dir="", role="admin"),
        )


def poll_threads(ctx: Intake) -> None:
    """One pass over the live threads, from where the last cycle stopped, within the budget."""
    entries = live_threads(ctx)
    if not entries:
        return
    budget = ctx.cfg.harness.thresholds.poll_thread_budget or len(entries)
    resume_at = files.slack_cursors().read().threads_next
    first = next((i for i, e in enumerate(entries) if _key(e) >= resume_at), 0)
    order = entries[first:] + entries[:first]
    changes: dict[str, dict[str, Any]] = {}
    gone: list[ThreadEntry] = []
    next_key = _key(order[0])
    try:
        for index, entry in enumerate(order):
            if index >= budget:
                next_key = _key(entry)
                break
            next_key = _key(entry)  # a 429 here: this one is first next time
            poll_thread(ctx, entry, changes, gone)
            ctx.tally.threads_polled += 1
            next_key = _key(order[(index + 1) % len(order)])
    finally:
        _save(changes, next_key)
        _tell(ctx, gone)


def poll_thread(
    ctx: Intake,
    entry: ThreadEntry,
    changes: dict[str, dict[str, Any]],
    gone: list[ThreadEntry] | None = None,
) -> None:
    """Read one thread's new replies into the lifecycle; ``gone`` collects evicted threads."""
    lifecycle = ctx.lifecycle
    assert lifecycle is not None
    key = _key(entry)
    try:
        found = ctx.call(
            lambda: ctx.slack.replies(entry.channel, entry.thread_ts, oldest=read_start(ctx, entry))
        )
    except ThreadGone:
        if _gone(ctx, entry, changes):
            (gone if gone is not None else []).append(entry)
        return
    except BudgetExhausted:
        raise
    except ServiceError as exc:  # e.g. its channel is failing: reported with the channel
        event(log, "thread_poll_failed", logging.WARNING, thread=key, error=exc.line())
        return
    if entry.gone_answers:
        changes.setdefault(key, {})["gone_answers"] = 0
    replies = [m for m in found if m.get("ts") != entry.thread_ts]
    lifecycle.run(lifecycle.record(entry.channel, replies, kind="reply", thread=key))
    if entry.role == "case_thread" and entry.channel == ctx.self_dm and entry.case_id:
        approve_by_reaction(ctx, entry, found)
    if replies:
        newest = max((str(m["ts"]) for m in replies), key=_ts)
        if newest != entry.last_seen_ts:
            changes.setdefault(key, {})["last_seen_ts"] = newest


def approve_by_reaction(ctx: Intake, entry: ThreadEntry, found: list[Any]) -> None:
    """#34 item 12: the operator's ✅ on the harness's newest post in the case thread (the
    draft) approves a case that waits for it, as ``admin: task <case>`` typed there would —
    with no followup run and no model call. Only the newest post counts: an old ✅ on an
    earlier draft does not approve a case reopened since. The status makes it idempotent."""
    # admin tracks its threads here: a two-module pair
    from harness_cli.intake import admin  # noqa: PLC0415

    own = [m for m in found if is_own_post(m, entry.channel)]
    if not own:
        return
    newest = max(own, key=lambda m: _ts(str(m.get("ts", "0"))))
    if not approval_reaction(newest, ctx.operator):
        return
    try:
        if registry.load_case(entry.case_id).status != "awaiting_approval":
            return
        admin.from_slack(
            ctx,
            f"admin: task {entry.case_id}",
            channel=entry.channel,
            ts=str(newest["ts"]),
            thread_ts=entry.thread_ts,
        )
        registry.sync(f"case {entry.case_id}: approved by reaction", ctx.cfg.harness.thresholds)
    except HarnessError as exc:  # the reaction stays: the next cycle tries again
        ctx.tally.errors.append(f"{entry.case_id}: approval by reaction: {exc.line()}")
        event(log, "reaction_approval_failed", logging.WARNING, case_id=entry.case_id,
              error=exc.line())  # fmt: skip


def _gone(ctx: Intake, entry: ThreadEntry, changes: dict[str, dict[str, Any]]) -> bool:
    """thread_not_found: count it, or evict (True) once the thread is really gone."""
    t = ctx.cfg.harness.thresholds
    answers = entry.gone_answers + 1
    young = time.time() - _ts(entry.thread_ts) < t.read_lag_window_seconds
    parent_shows = True
    if not young:
        try:
            parent_shows = (
                ctx.call(lambda: ctx.slack.message(entry.channel, entry.thread_ts)) is not None
            )
        except BudgetExhausted:
            raise
        except ServiceError:
            parent_shows = True  # cannot tell: count it, do not conclude
    if (parent_shows or young) and answers < t.thread_gone_confirmations:
        changes.setdefault(_key(entry), {})["gone_answers"] = answers
        event(log, "thread_not_found_unconfirmed", thread=_key(entry), answers=answers,
              young=young)  # fmt: skip
        return False
    evict(ctx, entry, answers=answers, parent_shows=parent_shows)
    return True


def evict(ctx: Intake, entry: ThreadEntry, *, answers: int, parent_shows: bool) -> None:
    """The thread drops out of every later cycle, now (written at once, not with the batch)."""
    key = _key(entry)
    _apply({key: {"evicted": True, "gone_answers": answers}})
    ctx.tally.evicted.append(key)
    event(log, "thread_evicted", case_id=entry.case_id, channel=entry.channel,
          thread_ts=entry.thread_ts, answers=answers, parent_shows=parent_shows)  # fmt: skip


TELL_EACH = 3
"""Up to this many evictions in one cycle are said in each case's thread; more (a dead-thread
storm) in one DM listing them, rather than a burst of posts."""


def _tell(ctx: Intake, gone: list[ThreadEntry]) -> None:
    """An open case losing a thread is the operator's business: say it in the case thread (or,
    when the case thread itself is gone, in the self-DM)."""

    open_ = [e for e in gone if e.role != "admin" and _case_open(e.case_id)]
    if not open_:
        return
    fix = "If one still matters, link it again with `admin: register-thread <its link> <case>`."
    notes: list[tuple[str | None, str]] = []
    if len(open_) <= TELL_EACH:
        for entry in open_:
            where = "the case thread" if entry.role == "case_thread" else "the ticket thread"
            text = (
                f"*{entry.case_id}*: {where} ({entry.channel}/{entry.thread_ts}) is no longer "
                f"readable (Slack: thread_not_found — deleted?), so I stopped polling it. {fix}"
            )
            notes.append((entry.case_id, text))
    else:
        lines = [
            f"{len(open_)} threads of open cases are no longer readable (Slack: "
            "thread_not_found — deleted?), so I stopped polling them:"
        ]
        lines += [f"• *{e.case_id}*: {e.channel}/{e.thread_ts}" for e in open_[:20]]
        if len(open_) > 20:
            lines.append(f"• … and {len(open_) - 20} more (see `harness case show <case>`)")
        notes.append((None, "\n".join([*lines, fix])))
    for case_id, text in notes:
        try:
            dm(ctx.out, ctx.cfg, "thread_evicted", text, case_id=case_id)
        except HarnessError as exc:
            event(log, "eviction_dm_failed", logging.ERROR, case_id=case_id, error=exc.line())


def _case_open(case_id: str) -> bool:
    try:
        return registry.load_case(case_id).status != "closed"
    except HarnessError:
        return False


def _save(changes: dict[str, dict[str, Any]], next_key: str) -> None:
    _apply(changes)
    state = files.slack_cursors().read()
    if state.threads_next != next_key:
        with files.slack_cursors().update() as fresh:
            fresh.threads_next = next_key


def _apply(changes: dict[str, dict[str, Any]]) -> None:
    """Write field changes to whichever file holds each thread: one write per file."""
    if not changes:
        return
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        if not any(k in handle.read().threads for k in changes):
            continue
        with handle.update() as tmap:
            for key, fields in changes.items():
                if key in tmap.threads:
                    for name, value in fields.items():
                        setattr(tmap.threads[key], name, value)
    admin = [k for k in changes if k in files.slack_cursors().read().admin_threads]
    if admin:
        with files.slack_cursors().update() as state:
            for key in admin:
                if key in state.admin_threads:
                    for name, value in changes[key].items():
                        setattr(state.admin_threads[key], name, value)


def _key(entry: ThreadEntry) -> str:
    return ThreadMap.key(entry.channel, entry.thread_ts)


def _ts(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        return 0.0
