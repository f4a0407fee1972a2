"""What every intake path shares (poll-slack, listen, admin): the config, the Slack client, the
one door out, and the one way to start a workflow — through the pause gate."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from harness_cli import dispatch
from harness_cli.config import Config
from harness_cli.intake import pause
from harness_cli.logs import event
from harness_cli.ops.outbound import Outbound
from harness_cli.services.slack import RateLimited, Slack
from harness_cli.state import files

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


@dataclass
class Intake:
    cfg: Config
    slack: Slack
    out: Outbound
    backend: dispatch.Backend
    budget_seconds: float = 30.0
    tally: Tally = field(default_factory=Tally)
    started: float = field(default_factory=time.monotonic)
    batch_sync: bool = False
    """A poll cycle commits the cases it opened once, at its end (``flush``); the listener,
    which handles one event at a time, commits each at once."""

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

    def auto_monitor(self, project: str) -> bool:
        """oncall-toggle's override, else the project's setting, else harness.yaml's."""
        override = files.oncall_state().read().auto_monitor
        if override is not None:
            return override
        own = self.cfg.projects.projects[project].auto_monitor
        return self.cfg.harness.auto_monitor if own is None else own

    def flush(self) -> None:
        """Commit and push the cases this run opened, in one sync."""
        if self.batch_sync and self.tally.new_cases:
            from harness_cli.workspace import registry

            count = len(self.tally.new_cases)
            registry.sync(f"poll-slack: {count} new case(s)", self.cfg.harness.thresholds)

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
                time.sleep(exc.retry_after)

    def start(
        self,
        workflow: str,
        *,
        case_id: str,
        case_dir: str,
        trigger: dispatch.Trigger,
        channel: str = "",
        thread_ts: str = "",
        args: dict[str, object] | None = None,
    ) -> bool:
        """Dispatch a workflow unless the pause holds it back (automatic triggers only)."""
        if not pause.allow(trigger.kind, case_id=case_id, detail=f"{workflow} ({trigger.kind})"):
            self.tally.held_back.append(f"{workflow} {case_id}")
            return False
        payload = dispatch.Payload(
            workflow=workflow,
            case_id=case_id,
            case_dir=case_dir,
            channel=channel,
            thread_ts=thread_ts,
            trigger=trigger,
            args=dict(args or {}),
        )
        dispatch.dispatch(payload, backend=self.backend)
        self.tally.dispatched.append(f"{workflow} {case_id}")
        return True
