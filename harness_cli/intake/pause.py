"""The pause kill switch (``oncall-state.json``), reference Layer 6.

"Pausing silences automatic dispatch triggered by other people's activity, and never the
operator's own admin commands or in-thread actions." Version one paused the resume command too;
version two paused too narrowly and a reviewer auto-reply fired while "paused". So every dispatch
site asks one question here — is this *automatic* work caused by someone else? — and only that
is held back (and remembered, so ``status`` can say what was held).

Held work is not dropped: a dispatch held with its payload joins the ``held_work`` queue of
``oncall-state.json``, which :mod:`harness_cli.intake.held` replays exactly once, in order, when
the pause ends — by ``resume`` or by its duration running out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from harness_cli import clock
from harness_cli.logs import event
from harness_cli.state import files
from harness_cli.state.models import HeldBack, HeldWork, OncallState

if TYPE_CHECKING:
    from harness_cli.outbox.outbound import Outbound

log = logging.getLogger("harness.pause")

HELD_BACK_LIMIT = 200
"""The held-back list is bounded; status reports the newest entries and the total."""
HELD_WORK_LIMIT = 2000
"""The replay queue is bounded too (weeks of tickets); past it the oldest item is dropped and
logged as an error, never silently."""

AUTOMATIC = frozenset(
    {"new_ticket", "ticket_reply", "review_note", "ci_failed", "ci_event", "pagerduty"}
)
"""Trigger kinds caused by other people's activity: gated while paused."""
OPERATOR = frozenset({"operator_reply", "admin_command"})
"""Trigger kinds that are the operator's own intent: never gated."""


@dataclass
class PauseView:
    paused: bool
    since: datetime | None
    until: datetime | None
    by: str
    held_back: list[HeldBack]
    held_back_total: int
    held_work: list[HeldWork]
    """Dispatches waiting to be replayed (also after the pause ended, until they are)."""


def active(state: OncallState, now: datetime | None = None) -> bool:
    """Paused, and the optional duration has not run out (by the harness clock)."""
    if not state.paused:
        return False
    return state.paused_until is None or (now or clock.now()) < state.paused_until


def is_paused() -> bool:
    """Fails closed: an unreadable oncall-state.json reads as paused (``files.oncall_state``)."""
    return active(files.oncall_state().read())


def tell_if_unreadable(out: Outbound, channel: str) -> int:
    """Tell the operator, once per bad content and by DM, that the kill switch was unreadable
    and the harness therefore holds itself paused (error.log and stderr already had it when
    it was first read). A DM that fails is tried again next cycle. Returns the DMs sent."""
    handle = files.oncall_state()
    handle.read()  # a bad file is found (and its bytes kept) by reading it
    sent = 0
    for copy in handle.unreadable_copies():
        text = (
            f":warning: The kill switch {handle.path} could not be read, so the harness holds "
            f"itself paused: automatic work is held back. Its bytes are kept in {copy}. "
            "Run `harness resume` (or `admin: oncall resume`) to unpause and write a good "
            "file; `harness pause` keeps it paused with a good file."
        )
        out.post(channel, text)
        handle.mark_told(copy)
        event(log, "kill_switch_unreadable_told", copy=str(copy))
        sent += 1
    return sent


def pause(duration: timedelta | None, *, by: str) -> OncallState:
    now = clock.now()
    with files.oncall_state().update() as state:
        if not active(state, now):
            state.paused_at = now
            state.held_back = []
            state.held_back_total = 0
        state.paused = True
        state.paused_by = by
        state.paused_until = now + duration if duration else None
    event(log, "paused", by=by, until=str(state.paused_until or "resume"))
    return state


def resume(*, by: str) -> tuple[bool, list[HeldBack]]:
    """End the pause; returns whether one was active and what it held back."""
    with files.oncall_state().update() as state:
        was = active(state)
        held = list(state.held_back)
        state.paused = False
        state.paused_until = None
    event(log, "resumed", by=by, held_back=len(held))
    return was, held


def view() -> PauseView:
    state = files.oncall_state().read()
    on = active(state)
    return PauseView(
        paused=on,
        since=state.paused_at if on else None,
        until=state.paused_until if on else None,
        by=state.paused_by if on else "",
        held_back=list(state.held_back) if on else [],
        held_back_total=state.held_back_total if on else 0,
        held_work=list(state.held_work),
    )


def allow(
    trigger: str, *, case_id: str, detail: str = "", payload: dict[str, Any] | None = None
) -> bool:
    """May this dispatch go ahead? Operator intent always may; automatic work is held back (and
    recorded) while paused. Unknown trigger kinds count as automatic: silence is the safe side.
    With ``payload`` the held dispatch is queued to be replayed when the pause ends (once: a
    payload whose ``key`` is already queued is not queued again)."""
    if trigger in OPERATOR:
        return True
    state = files.oncall_state().read()
    if not active(state):
        return True
    with files.oncall_state().update() as state:
        if not active(state):
            return True
        now = clock.now()
        state.held_back.append(
            HeldBack(at=now, trigger=trigger, case_id=case_id, detail=detail[:200])
        )
        del state.held_back[:-HELD_BACK_LIMIT]
        state.held_back_total += 1
        if payload is not None:
            workflow = str(payload.get("workflow", ""))
            item = HeldWork(
                at=now, workflow=workflow, case_id=case_id, trigger=trigger, payload=payload
            )
            _enqueue(state, item)
    event(
        log, "held_back_while_paused", case_id=case_id, trigger=trigger, queued=payload is not None
    )
    return False


def _enqueue(state: OncallState, item: HeldWork) -> None:
    key = item.payload.get("key")
    if key and any(h.payload.get("key") == key for h in state.held_work):
        return
    state.held_work.append(item)
    if len(state.held_work) > HELD_WORK_LIMIT:
        dropped = state.held_work.pop(0)
        event(log, "held_work_overflow", logging.ERROR, case_id=dropped.case_id,
              workflow=dropped.workflow, limit=HELD_WORK_LIMIT)  # fmt: skip


def pop_held(key: str, first: HeldWork) -> None:
    """Drop a replayed item (the first of the queue, or the one with its payload ``key``)."""
    with files.oncall_state().update() as state:
        for i, item in enumerate(state.held_work):
            if item == first or (key and item.payload.get("key") == key):
                del state.held_work[i]
                return
