"""Deliver what is still owed: the next run of anything that owns the case, every poll-slack
cycle and every mr-monitor cycle call :func:`flush`.

Oldest first, one attempt each, inside a small time budget; a 429 ends the Slack side of the
flush (Slack is limiting: the rest waits for the next run). An obligation that used up
``outbox_max_attempts`` is given up, and the operator is told once — by another path than the
one that failed: a top-level DM in the self-DM (not the case thread), error.log, and
``harness status``, which lists what is owed and what was given up.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness_cli.errors import HarnessError, LockHeld
from harness_cli.logs import event
from harness_cli.outbox import gitlab_door, jira_door, ledger, slack_door
from harness_cli.outbox.ledger import Obligation
from harness_cli.workspace import registry

if TYPE_CHECKING:
    from harness_cli.outbox.outbound import Outbound
    from harness_cli.services.gitlab import GitLab
    from harness_cli.services.jira import Jira

log = logging.getLogger("harness.outbox")

FLUSH_BUDGET_S = 20.0
"""A flush never holds up the cycle that runs it for longer than this."""


@dataclass
class FlushReport:
    delivered: list[str] = field(default_factory=list)
    still_owed: list[str] = field(default_factory=list)
    given_up: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    """Best-effort writes (placeholders) a dead run left: never delivered late."""

    def lines(self) -> list[str]:
        out = []
        if self.delivered:
            out.append(f"delivered {len(self.delivered)} owed write(s)")
        if self.still_owed:
            out.append(f"{len(self.still_owed)} write(s) still owed (the next run tries again)")
        if self.given_up:
            out.append(f"gave up {len(self.given_up)} owed write(s); the operator was told")
        return out


def flush(
    out: Outbound | None,
    *,
    self_dm: str = "",
    gitlab: GitLab | None = None,
    case_id: str | None = None,
    budget_s: float = FLUSH_BUDGET_S,
    jira: Jira | None = None,
) -> FlushReport:
    """One attempt at each owed write (of ``case_id``, or all) this process can make."""

    report = FlushReport()
    started = time.monotonic()
    slack_limited = gitlab_limited = False
    for ob in ledger.owed(case_id):
        if time.monotonic() - started > budget_s:
            break
        if ob.retried_by:
            continue  # its own lifecycle retries it (an intake message)
        if not ob.owed:
            if out is not None:
                _settle_leftover(out, ob, report)
            continue
        if ob.service == "jira":
            if jira is None:
                continue
            try:
                jira_door.attempt(jira, ob)
            except LockHeld:
                continue
            except HarnessError:
                again = ledger.find(ob.key)
                gone = again is not None and again.state == "given_up"
                (report.given_up if gone else report.still_owed).append(ob.key)
                continue
            report.delivered.append(ob.key)
            if out is not None and self_dm:
                _report_jira(out, self_dm, ob)
            continue
        is_slack = ob.service == "slack"
        if (is_slack and (out is None or slack_limited)) or (
            not is_slack and (gitlab is None or gitlab_limited)
        ):
            continue
        try:
            if is_slack:
                assert out is not None
                slack_door.attempt(out, ob, inline=False)
            else:
                assert gitlab is not None
                gitlab_door.attempt(gitlab, ob)
        except LockHeld:
            continue  # another run is delivering it right now
        except HarnessError as exc:
            again = ledger.find(ob.key)
            if again is not None and again.state == "given_up":
                report.given_up.append(ob.key)
            else:
                report.still_owed.append(ob.key)
            if getattr(exc, "status", None) == 429:
                slack_limited = slack_limited or is_slack
                gitlab_limited = gitlab_limited or not is_slack
            continue
        report.delivered.append(ob.key)
    if report.delivered:
        event(log, "owed_writes_delivered", count=len(report.delivered), case_id=case_id or "")
    if out is not None and self_dm:
        tell_given_up(out, self_dm)
    return report


def _report_jira(out: Outbound, self_dm: str, ob: Obligation) -> None:
    """A Jira action a run could not finish, done now: said in its case thread, under the key
    the run would have used (never twice)."""

    thread = registry.case_thread(ob.case_id) if ob.case_id else None
    t = ob.target
    what = {
        "comment": f"comment on {t.get('issue')}",
        "transition": f"move {t.get('issue')} to {t.get('to')}",
        "assign": f"assign {t.get('issue')} to {t.get('assignee')}",
    }
    text = f"Ran action {t.get('n')} (retried): {what.get(ob.action, ob.action)} — done in Jira."
    try:
        out.post(self_dm, text, thread_ts=thread.thread_ts if thread else None,
                 purpose="jira_action", key=f"hand-report:{ob.digest}")  # fmt: skip
    except HarnessError as exc:
        event(log, "jira_action_report_owed", logging.WARNING, key=ob.key, error=exc.line())


def _settle_leftover(out: Outbound, ob: Obligation, report: FlushReport) -> None:
    """A best-effort post (a status placeholder) a dead run was making: never posted late, but
    when it did land it is recorded as done, so the run resumed in its scope edits it to its
    end instead of leaving it spinning."""

    try:
        with ledger.attempt_lock(ob):
            if ob.inflight and slack_door.settle(out, ob):
                return
            ledger.drop(ob)
    except LockHeld:
        return  # its run is alive and posting it
    except HarnessError:
        return  # Slack cannot say now; the next flush asks again
    report.dropped.append(ob.key)


def tell_given_up(out: Outbound, self_dm: str) -> bool:
    """One top-level DM about every given-up write not told yet; True when it went out."""
    untold = [o for o in ledger.given_up() if not o.told]
    if not untold:
        return False
    lines = [
        f":warning: I gave up delivering {len(untold)} message(s) after "
        f"{out.limits.outbox_max_attempts} attempts each:"
    ]
    for ob in untold[:10]:
        case = f"{ob.case_id}: " if ob.case_id else ""
        lines.append(f"• {case}{ob.describe()} — {ob.last_error[:160]}")
    if len(untold) > 10:
        lines.append(f"• … and {len(untold) - 10} more")
    lines.append(
        "`harness status` lists them; each text is kept in $HARNESS_HOME/outbox/given-up/."
    )
    digest = ledger.digest("|".join(o.key for o in untold))
    try:
        out.post(
            self_dm, "\n".join(lines), purpose="given_up", owed=False, key=f"given-up:{digest}"
        )
    except HarnessError as exc:
        event(log, "given_up_notice_failed", logging.ERROR, error=exc.line())
        return False
    for ob in untold:
        ob.told = True
        ledger.save(ob)
    return True


def summary() -> dict[str, object]:
    """For ``harness status``: what is owed and what was given up."""
    owed = [o for o in ledger.owed() if o.owed]
    gone = ledger.given_up()
    return {
        "owed": len(owed),
        "given_up": len(gone),
        "owed_items": [
            f"{o.case_id or '-'}: {o.describe()} ({o.attempts} tries)" for o in owed[:20]
        ],
        "given_up_items": [
            f"{o.case_id or '-'}: {o.describe()}: {o.last_error[:120]}" for o in gone[:20]
        ],
    }
