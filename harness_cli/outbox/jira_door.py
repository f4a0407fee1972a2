"""Jira comments, transitions and assignments through the outbox: recorded, attempted,
confirmed — exactly once (#30, the reference's 95+ rule).

Each write is recorded under its idempotency key before it is attempted. How a retry after a
crash or a lost answer knows whether the write landed:
- a comment carries the key's digest as a comment entity property (``harness.outbox``), set in
  the comment's own POST (atomic with it): a retry whose predecessor's answer is unknown lists
  the issue's comments and takes the one with its digest as the confirmation;
- a transition or an assignment is a state: the issue already in that status, or already
  assigned to that person, *is* the confirmation (a second one would be a no-op at best, a
  400 at worst) — it is checked before every attempt.
A 404 means the issue is gone: the obligation is dropped. A 4xx other than 429 will not get
better by retrying: given up at once, and the operator told.
"""

from __future__ import annotations

import logging

from harness_cli import clock
from harness_cli.errors import ServiceError
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.outbox import ledger, scope
from harness_cli.outbox.ledger import Obligation
from harness_cli.outbox.thresholds import ObligationThresholds
from harness_cli.services.jira import PROPERTY, Jira

log = logging.getLogger("harness.outbox")


def write(
    jira: Jira, *, action: str, issue: str, n: int, body: str = "", to: str = "", assignee: str = ""
) -> Obligation:
    """Record the write under the current scope's key (``n``: the action's number in the
    case, so each action has its own key), then make it once. Returns the obligation as it
    stands (``state`` ``done``, or ``owed`` after a failure that was raised)."""
    full, case_id = scope.key_for(f"jira_{action}", f"{issue}#{n}")
    target = {"issue": issue, "n": str(n), "to": to, "assignee": assignee}
    ob, _ = ledger.create(
        ledger.new(
            full,
            case_id=case_id,
            service="jira",
            action=action,
            purpose=f"jira_{action}",
            target=target,
            text=body,
        )
    )
    if ob.state != "done":
        attempt(jira, ob)
    return ledger.find(ob.key) or ob


def attempt(jira: Jira, ob: Obligation) -> None:
    """One attempt (also a later run's: poll-slack's flush)."""
    with ledger.attempt_lock(ob, timeout=5.0):
        ob = ledger.find(ob.key) or ob
        if ob.state == "done":
            return
        if _landed(jira, ob):
            _done(ob, "found")
            return
        ob.inflight, ob.attempts, ob.last_attempt_at = True, ob.attempts + 1, clock.now()
        ledger.save(ob)
        crash_point("outbox.jira_attempting")
        try:
            result = _send(jira, ob)
        except ServiceError as exc:
            if exc.status == 404:
                event(log, "owed_jira_dropped", logging.WARNING, key=ob.key, error=exc.message)
                ledger.drop(ob)
                raise
            hopeless = exc.status is not None and 400 <= exc.status < 500 and exc.status != 429
            ledger.failed(
                ob, exc.line(), inflight=exc.status is None or exc.status >= 500,
                limit=1 if hopeless else ObligationThresholds().outbox_max_attempts,
            )  # fmt: skip
            raise
        crash_point("outbox.jira_landed")
        _done(ob, result)


def _send(jira: Jira, ob: Obligation) -> str:
    t = ob.target
    if ob.action == "comment":
        return jira.add_comment(t["issue"], ob.text, {PROPERTY: {"key": ob.digest}})
    if ob.action == "transition":
        jira.transition(t["issue"], t["to"])
        return t["to"]
    jira.assign(t["issue"], t["assignee"])
    return t["assignee"]


def _landed(jira: Jira, ob: Obligation) -> bool:
    """Did this write already happen? Comments: only asked after an attempt whose answer is
    unknown (a fresh comment cannot exist yet); states: always (they are their own proof)."""
    t = ob.target
    if ob.action == "comment":
        if not ob.inflight:
            return False
        found = any(
            (c.properties.get(PROPERTY) or {}).get("key") == ob.digest
            for c in jira.comments(t["issue"])
        )
    elif ob.action == "transition":
        found = jira.issue(t["issue"]).status.strip().lower() == t["to"].strip().lower()
    else:
        found = jira.issue(t["issue"]).assignee.strip().lower() == t["assignee"].strip().lower()
    if found:
        event(log, "owed_jira_found", key=ob.key, action=ob.action)
    return found


def _done(ob: Obligation, result: str) -> None:
    ob.state, ob.inflight, ob.done_at, ob.last_error = "done", False, clock.now(), ""
    ob.result = result
    ledger.save(ob)
