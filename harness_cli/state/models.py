"""A pydantic model for every ``$HARNESS_HOME`` file of CONTRACT §3.

These files are written by the harness, not by people, so unknown keys are kept (a newer
harness on the same machine must not lose what an older one cannot read), and every model
carries a ``schema_version``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _State(BaseModel):
    model_config = ConfigDict(extra="allow")
    schema_version: int = 1


class ThreadEntry(_State):
    """One Slack thread that belongs to a case."""

    channel: str
    thread_ts: str
    case_id: str
    case_dir: str
    """Absolute path of the case workspace; rewritten by ``harness case migrate``."""
    project: str = ""
    jira: str | None = None
    role: Literal["ticket", "case_thread", "manual"] = "ticket"
    """``ticket``: the customer's thread in a support channel; ``case_thread``: the harness's
    thread in the operator's self-DM; ``manual``: linked by ``register-thread``."""
    closed: bool = False
    """Closed cases are not polled for replies."""
    evicted: bool = False
    """Set when Slack answered thread_not_found: the thread drops out of every later cycle."""
    last_seen_ts: str = ""
    """Newest reply already read; the next replies call starts near it."""


class ThreadMap(_State):
    """``task-thread-map.json`` and ``oncall_thread_map.json``: Slack thread → case."""

    threads: dict[str, ThreadEntry] = Field(default_factory=dict)

    @staticmethod
    def key(channel: str, thread_ts: str) -> str:
        return f"{channel}/{thread_ts}"

    def for_case(self, case_id: str) -> list[ThreadEntry]:
        return [t for t in self.threads.values() if t.case_id == case_id]


class MonitoredMr(_State):
    project: str
    iid: int
    case_id: str
    case_dir: str
    web_url: str = ""
    source_branch: str = ""
    last_sha: str = ""
    ci_status: str = ""
    fix_ci_attempts: int = 0
    paused: bool = False
    """``admin: mr pause``: no auto-replies on this MR until resumed."""
    rescan_requested: bool = False
    """``admin: mr rescan``: the next mr-monitor cycle checks this MR whatever its timers say."""
    state: str = "opened"


class MonitoredMrs(_State):
    """``monitored-mrs.json``: the MRs the harness opened, with their CI status."""

    mrs: dict[str, MonitoredMr] = Field(default_factory=dict)

    @staticmethod
    def key(project: str, iid: int) -> str:
        return f"{project}!{iid}"


class PatchPrEntry(_State):
    status: Literal["pending", "open", "merged", "no_gaps", "failed", "closed"] = "pending"
    mr_url: str = ""
    updated_at: datetime | None = None
    detail: str = ""


class PatchPrState(_State):
    """``patch-pr-state.json``: per-case finalize status."""

    cases: dict[str, PatchPrEntry] = Field(default_factory=dict)


class HeldBack(_State):
    """One dispatch that the pause held back."""

    at: datetime
    trigger: str
    case_id: str
    detail: str = ""


class OncallState(_State):
    """``oncall-state.json``: the kill switch. Pausing silences automatic dispatch triggered by
    other people's activity — never the operator's own commands."""

    paused: bool = False
    paused_until: datetime | None = None
    """None with ``paused`` set means paused until ``resume``."""
    paused_at: datetime | None = None
    paused_by: str = ""
    auto_monitor: bool | None = None
    """``oncall-toggle`` override of harness.yaml's ``auto_monitor``; None = use the config."""
    paused_mrs: list[str] = Field(default_factory=list)
    held_back: list[HeldBack] = Field(default_factory=list)
    """What the current pause held back (newest last, bounded)."""
    held_back_total: int = 0


class ChannelCursor(_State):
    oldest: str = "0"
    """The ts the next poll starts from; frozen on empty polls (Slack's read-after-write lag)."""
    empty_polls: int = 0
    updated_at: datetime | None = None


class SlackCursors(_State):
    """``slack-cursors.json``: one cursor per polled channel."""

    channels: dict[str, ChannelCursor] = Field(default_factory=dict)


class DedupSet(_State):
    """``socket-dedup``: message keys already dispatched, shared by ``listen`` and
    ``poll-slack``; each with the epoch second it expires."""

    seen: dict[str, float] = Field(default_factory=dict)
