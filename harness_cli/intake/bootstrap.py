"""A fresh HARNESS_HOME — a second machine joining the workspace, or a reinstall — starts from what
the workspace knows, not from the last hour of Slack (issue #13, point 3).

- The install instant (``slack-cursors.json: installed_at``, set by ``harness init`` or by the
  first intake run) splits the self-DM in two: admin commands and thread replies older than it
  are history, not intent, and are never executed (``messages.is_history``).
- The threads of the workspace's open cases (each ``case.json``'s source ticket and case
  thread) are registered in this machine's maps, read from the install on.
- Tickets of the lookback window that the workspace already holds as cases are recognised by
  case id and source (``tickets.open_ticket``) and not reopened.
- The operator is told once, in one DM, what was skipped.

A home that already has cursors predates this rule: it is marked bootstrapped as it is.
"""

from __future__ import annotations

import logging
import time
from typing import Literal

from harness_cli import clock
from harness_cli.errors import HarnessError
from harness_cli.intake.admin_parser import is_admin_text
from harness_cli.intake.context import Intake
from harness_cli.logs import event
from harness_cli.state import files
from harness_cli.state.models import ThreadEntry, ThreadMap
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.intake")
Role = Literal["ticket", "case_thread"]

SHOWN = 15
"""How many skipped items the DM names one by one."""


def mark_installed() -> None:
    """``harness init`` on a home that has never read Slack: remember when it was set up. A
    re-run, or an init on a home already in use, changes nothing (what it has not handled yet
    is still intent)."""
    state = files.slack_cursors().read()
    if state.installed_at is not None or state.channels or state.bootstrapped_at is not None:
        return
    with files.slack_cursors().update() as state:
        if state.installed_at is None and not state.channels:
            state.installed_at = time.time()


def ensure(ctx: Intake) -> None:
    """Run the bootstrap once per home; set ``ctx.history_before`` on every run."""
    state = files.slack_cursors().read()
    if state.bootstrapped_at is None:
        fresh = not state.channels
        installed = state.installed_at or time.time()
        rebuilt = _rebuild_threads(ctx.self_dm, installed) if fresh else 0
        with files.slack_cursors().update() as state:
            if state.bootstrapped_at is None:
                state.bootstrapped_at = clock.now()
                if fresh:
                    state.installed_at = state.installed_at or time.time()
                else:  # upgraded in place: nothing here is history, nothing to report
                    state.bootstrap_reported = True
        event(log, "intake_bootstrapped", fresh=fresh, threads_rebuilt=rebuilt,
              installed_at=state.installed_at)  # fmt: skip
    ctx.history_before = state.installed_at or 0.0


def _rebuild_threads(self_dm: str, installed: float) -> int:
    """Register the ticket thread and case thread of every open case the workspace holds."""
    since = f"{installed:.6f}"
    count = 0
    for raw in registry.open_cases_raw():
        try:
            case = registry.load_case(str(raw.get("id", "")))
        except HarnessError:
            continue
        wanted: list[tuple[str, str, Role]] = []
        if case.source.channel and case.source.thread_ts:
            wanted.append((case.source.channel, case.source.thread_ts, "ticket"))
        if case.case_thread_ts:
            wanted.append((self_dm, case.case_thread_ts, "case_thread"))
        for channel, ts, role in wanted:
            count += _register(case, channel, ts, role, since)
    return count


def _register(case: Case, channel: str, ts: str, role: Role, since: str) -> int:
    key = ThreadMap.key(channel, ts)
    with files.thread_map(case.kind).update() as tmap:
        if key in tmap.threads:
            return 0
        tmap.threads[key] = ThreadEntry(
            channel=channel,
            thread_ts=ts,
            case_id=case.id,
            case_dir=str(registry.case_dir(case.id).resolve()),
            project=case.project,
            jira=case.jira,
            role=role,
            last_seen_ts=since,
        )
    return 1


def report(ctx: Intake) -> None:
    """After the first cycle of a fresh home: one DM saying what was skipped as history and
    which tickets were recognised as cases already held. Later skips are only logged."""
    skipped = ctx.tally.history
    if skipped:
        event(log, "history_skipped", items=skipped[:50], count=len(skipped))
    state = files.slack_cursors().read()
    if state.bootstrap_reported:
        return
    commands = [s for s in skipped if is_admin_text(_text(s))]
    others = [s for s in skipped if s not in commands]
    recognised = sorted(set(ctx.tally.recognised))
    lines: list[str] = []
    if commands or others or recognised:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(state.installed_at or 0))
        lines.append(f"This machine started reading Slack at {when} (a new HARNESS_HOME).")
        if commands or others:
            lines.append(
                f"I skipped {len(commands)} admin command(s) and {len(others)} reply(ies) older "
                "than that: they are history, not intent. Send again what you still want:"
            )
            lines += [f"• `{_text(s)}`" for s in [*commands, *others][:SHOWN]]
            if len(commands) + len(others) > SHOWN:
                lines.append(f"• … and {len(commands) + len(others) - SHOWN} more")
        if recognised:
            lines.append(
                "Already held as cases in the workspace, not reopened: " + ", ".join(recognised)
            )
    if lines:
        try:
            ctx.out.post(ctx.self_dm, "\n".join(lines))
        except HarnessError as exc:
            event(log, "bootstrap_dm_failed", logging.ERROR, error=exc.line())
            return
    with files.slack_cursors().update() as fresh:
        fresh.bootstrap_reported = True
        fresh.bootstrap_skipped = [*commands, *others][:200]


def _text(item: str) -> str:
    """``channel/ts: text`` → the text (what the operator typed)."""
    return item.split(": ", 1)[1] if ": " in item else item
