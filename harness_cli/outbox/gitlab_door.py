"""GitLab notes and discussion replies through the outbox: recorded, attempted, confirmed.

When an attempt's answer was lost, the next one first reads the MR's discussions and takes a
note with exactly this body (in that discussion, for a reply) as the confirmation — a reply is
never posted twice, and the team reads the harness's words with nothing added to them. A 404
means the MR is gone: the obligation is dropped (there is nothing left to answer).
MR creation needs no record: GitLab answers a second create for the branch with its 409, which
the client adopts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from harness_cli import clock
from harness_cli.errors import ServiceError
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.outbox import ledger, scope
from harness_cli.outbox.ledger import Obligation
from harness_cli.outbox.thresholds import ObligationThresholds

if TYPE_CHECKING:
    from harness_cli.services.gitlab import GitLab

log = logging.getLogger("harness.outbox")


class NoteOwed(ServiceError):
    """GitLab refused the note for now: recorded, a later run (mr-monitor) posts it."""


def write(
    client: GitLab,
    send: Callable[[str], None],
    *,
    action: str,
    project: str,
    iid: int,
    body: str,
    discussion_id: str = "",
) -> None:
    """Record the note (or reply) under the current scope's key, then make it once."""
    where = f"{project}!{iid}" + (f"#{discussion_id}" if discussion_id else "")
    full, case_id = scope.key_for(action, where)
    target = {"project": project, "iid": str(iid), "discussion_id": discussion_id}
    ob, _ = ledger.create(
        ledger.new(
            full,
            case_id=case_id,
            service="gitlab",
            action=action,
            purpose=action,
            target=target,
            text=body,
        )
    )
    if ob.state == "done":
        return
    _attempt(client, ob, send)


def attempt(client: GitLab, ob: Obligation) -> None:
    """A later run's attempt (mr-monitor's flush)."""
    t = ob.target
    if ob.action == "reply":
        send = client.raw_reply  # type: ignore[attr-defined]
        _attempt(
            client, ob, lambda body: send(t["project"], int(t["iid"]), t["discussion_id"], body)
        )
    else:
        note = client.raw_note  # type: ignore[attr-defined]
        _attempt(client, ob, lambda body: note(t["project"], int(t["iid"]), body))


def _attempt(client: GitLab, ob: Obligation, send: Callable[[str], None]) -> None:
    with ledger.attempt_lock(ob, timeout=5.0):
        ob = ledger.find(ob.key) or ob
        if ob.state == "done":
            return
        if ob.inflight and _posted(client, ob):
            _done(ob)
            return
        ob.inflight, ob.attempts, ob.last_attempt_at = True, ob.attempts + 1, clock.now()
        ledger.save(ob)
        crash_point("outbox.note_attempting")
        try:
            send(ob.text)
        except ServiceError as exc:
            if exc.status == 404:
                event(log, "owed_note_dropped", logging.WARNING, key=ob.key, error=exc.message)
                ledger.drop(ob)
                raise
            ledger.failed(
                ob, exc.message, inflight=exc.status is None or exc.status >= 500,
                limit=ObligationThresholds().outbox_max_attempts,
            )  # fmt: skip
            raise
        crash_point("outbox.note_landed")
        _done(ob)


def _posted(client: GitLab, ob: Obligation) -> bool:
    project, iid = ob.target["project"], int(ob.target["iid"])
    wanted = ob.target.get("discussion_id", "")
    for discussion in client.discussions(project, iid):
        if wanted and discussion.id != wanted:
            continue
        if any(note.body.strip() == ob.text.strip() for note in discussion.notes):
            event(log, "owed_note_found", key=ob.key)
            return True
    return False


def _done(ob: Obligation) -> None:
    ob.state, ob.inflight, ob.done_at, ob.last_error = "done", False, clock.now(), ""
    ledger.save(ob)
