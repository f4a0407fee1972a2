"""What every intake path shares (poll-slack, listen, admin): the config, the Slack client, the
one door out, and the one way to start a workflow — through the pause gate."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from harness_cli.config import Config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch.backends import BackendName, choose_backend
from harness_cli.dispatch.payload import Payload, Trigger, idempotency_key
from harness_cli.intake import pause
from harness_cli.logs import event
from harness_cli.outbox.doors import Doors
from harness_cli.outbox.outbound import Outbound
from harness_cli.services.gitlab import GitLab
from harness_cli.services.jira import Jira
from harness_cli.services.slack import RateLimited, Slack
from harness_cli.state import files

if TYPE_CHECKING:
    from harness_cli.intake.lifecycle import Lifecycle

log = logging.getLogger("harness.intake")
T = TypeVar("T")


class BudgetExhausted(Exception):
    """Slack asked us to wait longer than the cycle has left: end the cycle cleanly."""


@dataclass
class Tally:
    """What one intake run did, for the command's result."""

    new_cases: list[str] = field(default_factory=list)
    dispatched: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)
    admin: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    rate_limited_waits: float = 0.0
    ended_early: str = ""
    recovered: list[str] = field(default_factory=list)
    """Messages a killed or failed run left unfinished, finished by this one."""
    parked: list[str] = field(default_factory=list)
    replayed: list[str] = field(default_factory=list)
    """Held work dispatched because the pause is over."""
    recognised: list[str] = field(default_factory=list)
    """Tickets already held as cases in the workspace (e.g. by another machine)."""
    history: list[str] = field(default_factory=list)
    """Admin commands and replies older than this HARNESS_HOME's install: not executed."""
    channel_errors: list[str] = field(default_factory=list)
    threads_polled: int = 0
    folded: list[str] = field(default_factory=list)
    """Tickets past the intake rate, attached to their burst's flood case (``intake/flood``)."""


@dataclass
class Intake:
    cfg: Config
    doors: Doors
    """Slack, the outbox door, the forge and Jira, handed down by the edge (``wiring``)."""
    backend: BackendName
    budget_seconds: float = 30.0
    tally: Tally = field(default_factory=Tally)
    started: float = field(default_factory=time.monotonic)
    lifecycle: Lifecycle | None = None
    """Set while poll-slack or listen handles messages: the workspace commit is then part of
    the lifecycle's "done" (one commit for the batch), not of each write."""
    redelivery: bool = False
    """The message being handled was seen before (a takeover or a retry): its effects may
    already partly exist, so each is looked for before it is made."""
    command_ts: str = ""
    """The Slack ts of the admin command being executed (the key of what it dispatches)."""
    history_before: float = 0.0
    """Epoch second of this HARNESS_HOME's install: older admin commands and replies are
    history (0: no such rule, e.g. a home that predates it)."""
    stop: threading.Event | None = None
    """Set when the run must end now (``listen`` got SIGTERM): a Retry-After wait ends at once
    and the message in hand is left in flight — the next poll-slack cycle takes it over."""

    @classmethod
    def through(cls, cfg: Config, doors: Doors) -> Intake:
        """The context of an intake path, or of an admin command run by a workflow (a
        followup's approval): the configured dispatch backend and the cycle's budget."""
        return cls(
            cfg=cfg,
            doors=doors,
            backend=choose_backend(cfg.harness.dispatch),
            budget_seconds=cfg.harness.thresholds.poll_cycle_budget_seconds,
        )

    @property
    def slack(self) -> Slack:
        return self.doors.slack

    @property
    def out(self) -> Outbound:
        return self.doors.out

    @property
    def jira(self) -> Jira | None:
        """The Jira source (#30), or None when no ``JIRA_URL`` is configured."""
        return self.doors.jira

    @property
    def forge(self) -> GitLab:
        return self.doors.forge

    @property
    def operator(self) -> str:
        return self.cfg.harness.operator.slack_user_id

    @property
    def self_dm(self) -> str:
        return self.cfg.harness.operator.self_dm_channel

    def support_channels(self) -> dict[str, str]:
        """channel id → project, for every project in projects.yaml."""
        return {
            channel: name
            for name, project in self.cfg.projects.projects.items()
            for channel in project.slack_channels
        }

    @property
    def deferred(self) -> bool:
        """Writes leave the workspace commit to the lifecycle (poll-slack, listen)."""
        return self.lifecycle is not None

    def auto_monitor(self, project: str) -> bool:
        """``oncall-toggle <project>``'s override, else the project's own setting in
        projects.yaml, else ``oncall-toggle``'s default, else harness.yaml's: a project that
        says what it wants keeps it when the operator flips the default."""
        state = files.oncall_state().read()
        if project in state.auto_monitor_projects:
            return state.auto_monitor_projects[project]
        own = self.cfg.projects.projects[project].auto_monitor
        if own is not None:
            return own
        return self.cfg.harness.auto_monitor if state.auto_monitor is None else state.auto_monitor

    def call(self, fn: Callable[[], T]) -> T:
        """One Slack call, honouring 429 Retry-After inside the cycle budget."""
        while True:
            self.tally.calls += 1
            try:
                return fn()
            except RateLimited as exc:
                left = self.budget_seconds - (time.monotonic() - self.started)
                if exc.retry_after > left:
                    raise BudgetExhausted(str(exc)) from None
                event(log, "slack_rate_limited", logging.WARNING, wait=exc.retry_after)
                self.tally.rate_limited_waits += exc.retry_after
                if self.stop is None:
                    time.sleep(exc.retry_after)
                elif self.stop.wait(exc.retry_after):
                    raise BudgetExhausted("stopping: the process was asked to end") from None

    def start(
        self,
        workflow: str,
        *,
        case_id: str,
        case_dir: str,
        trigger: Trigger,
        channel: str = "",
        thread_ts: str = "",
        args: dict[str, object] | None = None,
    ) -> bool:
        """Dispatch a workflow unless the pause holds it back (automatic triggers only: those are
        queued and replayed when the pause ends). Idempotent by the payload key (one event, one
        dispatch, however often a crashed run retries it)."""
        payload = Payload(
            workflow=workflow,
            case_id=case_id,
            case_dir=case_dir,
            channel=channel,
            thread_ts=thread_ts,
            trigger=trigger,
            args=dict(args or {}),
        )
        payload.key = idempotency_key(payload)
        detail = f"{workflow} ({trigger.kind})"
        if not pause.allow(
            trigger.kind, case_id=case_id, detail=detail, payload=payload.model_dump(mode="json")
        ):
            self.tally.held_back.append(f"{workflow} {case_id}")
            return False
        done = dispatch.dispatch(payload, backend=self.backend)
        if not done.duplicate:
            waits = " (waits for a free workflow slot)" if done.detail == dispatch.WAITING else ""
            self.tally.dispatched.append(f"{workflow} {case_id}{waits}")
        return True

    def trigger(self, user: str | None = None) -> Trigger:
        """The trigger of what an admin command starts: the operator's intent, keyed by the
        command's Slack ts when it came from Slack."""
        return Trigger(kind="admin_command", user=user or self.operator, ts=self.command_ts)
