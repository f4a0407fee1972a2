"""A case's own thread in the operator's self-DM: opened once per case, whoever asks and however
often a crashed run asks again.

Idempotent by ``case_id``, looked for in this order before anything is posted: the thread maps,
``case.json``'s ``case_thread_ts`` (how a second machine learns it), and — when an earlier
attempt may have posted and died before recording it — the harness's own posts in the self-DM
since the case began (the opening post names the case as ``case *ID*``). Only then is a new
post made, and recorded in both places.
"""

from __future__ import annotations

import logging

from harness_cli.errors import HarnessError
from harness_cli.faults import crash_point
from harness_cli.intake.context import Intake
from harness_cli.logs import event
from harness_cli.outbox.outbound import is_own_post
from harness_cli.state.models import ThreadEntry
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.intake")


def marker(case_id: str) -> str:
    """How the opening post names its case (and how it is found again)."""
    return f"case *{case_id}*"


def ensure(ctx: Intake, case: Case, *, text: str, fresh: bool, since: str = "") -> ThreadEntry:
    """The case thread of ``case``, posted with ``text`` (which must contain ``marker``) only if
    it exists nowhere yet. ``fresh``: the case was created by this very call chain, so no earlier
    attempt can have posted; ``since``: a Slack ts no earlier than the case's first post."""
    existing = registry.case_thread(case.id)
    if existing is not None:
        return existing
    ts = case.case_thread_ts
    if not ts and not fresh:
        ts = _find_posted(ctx, case.id, since)
    if not ts:
        ts = ctx.out.post(ctx.self_dm, text)
        crash_point("intake.case_thread_posted")
    registry.register_thread(case, channel=ctx.self_dm, thread_ts=ts, role="case_thread")
    if case.case_thread_ts != ts:
        with registry.update_case(
            case.id, ctx.cfg.harness.thresholds, "case thread", sync_now=not ctx.deferred
        ) as fresh_case:
            fresh_case.case_thread_ts = ts
        case.case_thread_ts = ts
    crash_point("intake.case_thread")
    entry = registry.case_thread(case.id)
    assert entry is not None
    return entry


def _find_posted(ctx: Intake, case_id: str, since: str) -> str:
    """The ts of an opening post for ``case_id`` an earlier, killed attempt made; "" if none."""
    oldest = since or f"{case_created_epoch(case_id):.6f}"
    found = ctx.call(lambda: ctx.slack.history(ctx.self_dm, oldest=oldest, inclusive=True))
    for message in found:
        if (
            not message.get("thread_ts")
            and is_own_post(message)
            and marker(case_id) in str(message.get("text", ""))
        ):
            event(log, "case_thread_found_again", case_id=case_id, ts=message["ts"])
            return str(message["ts"])
    return ""


def case_created_epoch(case_id: str) -> float:
    """When the case was opened, a minute early (clock skew); 0 if unknown."""
    try:
        return max(registry.load_case(case_id).created_at.timestamp() - 60, 0.0)
    except HarnessError:  # a missing or unreadable case.json: search from the start
        return 0.0
