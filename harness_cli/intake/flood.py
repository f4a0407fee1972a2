"""Flood control (#28 R13): one sender, or one channel, cannot open cases faster than
``intake_rate`` allows. Before, one user's 60 messages opened 60 cases, paid for 60
investigations and posted 60 case threads in the operator's self-DM within seconds.

Within a window of ``window_minutes`` (by the messages' own Slack time, so a replay decides
the same way), a user's first ``per_user`` tickets — and a channel's first ``per_channel`` —
open cases as usual. The rest of that burst is *folded*: attached to ONE flood case (the
message itself in its ``folded.json``, nothing lost), announced by ONE case thread in the
self-DM, and never investigated by itself; the operator reads them there and starts what
deserves it (``admin: oncall-run <link>``). A burst ends when a window passes without a
folded message; the next one gets its own case.

Each message's decision is recorded (``$HARNESS_HOME/intake-rate.json``) before its effects, so
a message handled again after a crash (:mod:`harness_cli.intake.lifecycle`) is decided the same
way and its effects, each idempotent, are not doubled.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.config import resolve_project
from harness_cli.faults import crash_point
from harness_cli.intake import case_thread
from harness_cli.intake.context import Intake
from harness_cli.intake.thresholds import IntakeRate
from harness_cli.logs import event
from harness_cli.services.slack import Message
from harness_cli.state.locks import case_lock
from harness_cli.state.store import JsonFile, atomic_write_text
from harness_cli.workspace import registry
from harness_cli.workspace.case import Source

log = logging.getLogger("harness.intake")

FOLDED_FILE = "folded.json"
"""In the flood case's folder: every folded message, oldest first."""
KEEP_DECISIONS = timedelta(days=1)
"""A decision is kept this long after its message: a message handled again (a crash, a lease
taken over, a parked one retried the same day) is decided the same way."""


class Decision(BaseModel):
    model_config = ConfigDict(extra="allow")
    channel: str
    user: str
    ts: float
    folded_into: str = ""
    """The flood case the message went to; empty: it opened a case as usual."""


class Burst(BaseModel):
    model_config = ConfigDict(extra="allow")
    case_id: str
    last_ts: float
    count: int = 0


class RateState(BaseModel):
    """``$HARNESS_HOME/intake-rate.json``."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = 1
    decisions: dict[str, Decision] = Field(default_factory=dict)
    """Message key (``channel/ts``) → what was decided for it."""
    bursts: dict[str, Burst] = Field(default_factory=dict)
    """``user:U`` / ``channel:C`` → the flood case its current burst folds into."""


def state_file() -> JsonFile[RateState]:
    return JsonFile(paths.state_file("intake-rate.json"), RateState, compact=True)


def admit(ctx: Intake, channel: str, message: Message) -> bool:
    """True when the ticket may open its case; False when it was folded into a flood case
    (attached, its one DM posted if it is the burst's first)."""
    rate: IntakeRate = ctx.cfg.harness.intake_rate
    user, ts = str(message.get("user", "")), str(message["ts"])
    try:
        float(ts)
    except ValueError:
        return True  # not a Slack timestamp: no rate can be told; the ticket opens as usual
    folded_into = _decide(rate, channel, user, ts)
    crash_point("intake.rate_decided")
    if not folded_into:
        return True
    _fold(ctx, channel, message, folded_into)
    return False


def _decide(rate: IntakeRate, channel: str, user: str, ts: str) -> str:
    """The flood case ``channel/ts`` folds into, or "" (it opens its case), recorded for good:
    asked again after a crash, the answer is the same."""
    key, at = f"{channel}/{ts}", float(ts)
    window = rate.window_minutes * 60
    with state_file().update() as state:
        known = state.decisions.get(key)
        if known is not None:
            return known.folded_into
        # Both sides of the message: a lagging older message read after newer ones counts them.
        recent = [
            d for d in state.decisions.values() if not d.folded_into and abs(at - d.ts) < window
        ]
        scope = ""
        if rate.per_user and sum(d.user == user for d in recent) >= rate.per_user:
            scope = f"user:{user}"
        elif rate.per_channel and sum(d.channel == channel for d in recent) >= rate.per_channel:
            scope = f"channel:{channel}"
        if scope:
            burst = state.bursts.get(scope)
            if burst is None or at - burst.last_ts > window:
                who = user if scope.startswith("user:") else channel
                burst = Burst(case_id=f"flood-{who}-{ts.replace('.', '-')}", last_ts=at)
                state.bursts[scope] = burst
            burst.last_ts, burst.count = max(burst.last_ts, at), burst.count + 1
        folded = state.bursts[scope].case_id if scope else ""
        state.decisions[key] = Decision(channel=channel, user=user, ts=at, folded_into=folded)
        horizon = at - KEEP_DECISIONS.total_seconds()
        state.decisions = {k: d for k, d in state.decisions.items() if d.ts >= horizon}
    if folded:
        event(log, "ticket_folded", channel=channel, ts=ts, user=user, case_id=folded)
    return folded


def _fold(ctx: Intake, channel: str, message: Message, case_id: str) -> None:
    """Attach ``message`` to the flood case (opened by the burst's first message) and make
    sure its one case thread exists."""
    ts, user = str(message["ts"]), str(message.get("user", ""))
    project = resolve_project(ctx.cfg.projects, jira_key=None, channel=channel)
    by_user = case_id.startswith(f"flood-{user}-")
    who = f"<@{user}>" if by_user else f"everyone in <#{channel}>"
    opened = registry.open_case(
        ctx.cfg.harness.thresholds,
        case_id=case_id,
        project=project,
        title=f"Flood: tickets from {who} beyond the intake rate",
        message={**message, "channel": channel},
        # No thread_ts: the folded messages stay themselves (``admin: oncall-run`` on one opens
        # its own case), none of their threads is polled.
        source=Source(channel=channel, user=user),
        sync_now=not ctx.deferred,
    )
    count = _attach(opened.dir, {**message, "channel": channel})
    crash_point("intake.folded")
    rate: IntakeRate = ctx.cfg.harness.intake_rate
    limit = f"{rate.per_user} per user" if by_user else f"{rate.per_channel} per channel"
    case_thread.ensure(
        ctx,
        opened.case,
        text=f"Flood control: {who} sent more tickets than the intake rate allows ({limit} in "
        f"{rate.window_minutes:g} min). The rest of this burst goes into "
        f"{case_thread.marker(case_id)} ({project}) — no case, investigation or DM each; "
        f"nothing is lost. `harness case show {case_id}` lists them ({FOLDED_FILE}); "
        "`admin: oncall-run <link>` investigates one.",
        fresh=opened.created,
        since=ts,
    )
    ctx.tally.folded.append(f"{channel}/{ts} → {case_id}")
    if opened.created:
        ctx.tally.new_cases.append(case_id)
    event(log, "ticket_folded_attached", case_id=case_id, channel=channel, ts=ts, count=count)


def _attach(folder: Path, message: Message) -> int:
    """Add ``message`` to the case's ``folded.json`` once (by its ts); returns how many are
    there now."""
    path = folder / FOLDED_FILE
    with case_lock(path.parent.name):
        try:
            held = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            held = []
        if not isinstance(held, list):
            held = []
        if all(str(m.get("ts")) != str(message["ts"]) for m in held if isinstance(m, dict)):
            held.append({**message, "folded_at": clock.now().isoformat()})
            held.sort(key=lambda m: float(m.get("ts", 0)) if isinstance(m, dict) else 0.0)
            atomic_write_text(path, json.dumps(held, indent=2) + "\n")
    return len(held)
