"""A pydantic model for every ``$HARNESS_HOME`` file of CONTRACT §3.

These files are written by the harness, not by people, so unknown keys are kept (a newer
harness on the same machine must not lose what an older one cannot read), and every model
carries a ``schema_version``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


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
    role: Literal["ticket", "case_thread", "manual", "admin"] = "ticket"
    """``ticket``: the customer's thread in a support channel; ``case_thread``: the harness's
    thread in the operator's self-DM; ``manual``: linked by ``register-thread``; ``admin``: the
    thread under an admin command, where the operator may type the next one."""
    closed: bool = False
    """Closed cases are not polled for replies."""
    evicted: bool = False
    """Set once the thread is confirmed gone: it drops out of every later cycle."""
    last_seen_ts: str = ""
    """Newest reply already read; the next replies call starts near it."""
    gone_answers: int = 0
    """Consecutive cycles Slack answered thread_not_found while the parent still showed in
    history (a transient answer); reset by the next good read."""


class ThreadMap(_State):
    """``task-thread-map.json`` and ``oncall_thread_map.json``: Slack thread → case."""

    threads: dict[str, ThreadEntry] = Field(default_factory=dict)

    @staticmethod
    def key(channel: str, thread_ts: str) -> str:
        return f"{channel}/{thread_ts}"

    def for_case(self, case_id: str) -> list[ThreadEntry]:
        return [t for t in self.threads.values() if t.case_id == case_id]


class FixAttempt(_State):
    """One fix-ci dispatch of mr-monitor."""

    pipeline_id: int
    sha: str
    job_id: int = 0
    trace_file: str = ""
    at: datetime | None = None
    job: str = ""
    """The failed job's name."""
    outcome: str = ""
    """What the dev-agent run did (``FixResult.outcome``), once it reported back."""
    summary: str = ""
    """What the agent concluded, in its own words."""


class FixResult(_State):
    """What the last ``dev-agent --mode fix_ci`` run on an MR did, written by the dev-agent
    (mr-monitor only reads it): a run that changed nothing is a failed attempt, not silence."""

    id: str
    """Unique per run (its stamp): mr-monitor acts on each result once."""
    pipeline_id: int = 0
    """The red pipeline the run was for (0: a push recovery for a merge status)."""
    outcome: Literal["pushed", "no_change", "push_failed", "recovered", "not_recovered", "failed"]
    """``failed``: the run itself failed (its reason went to the operator)."""
    summary: str = ""
    """What the agent concluded, in its own words (for the escalation DM)."""
    sha: str = ""
    """What reached origin (empty: nothing did)."""
    at: datetime | None = None


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
    # -- mr-monitor's memory of what it already did (reference Layer 4: "each has a retry
    # budget and can recognize what it already did") --
    seen_updated_at: str = ""
    """GitLab ``updated_at`` of the MR when mr-monitor last examined it fully; a listing that
    returns the same value again (``updated_after`` is "on or after") costs no further call.
    Empty: never examined (a new or adopted MR), so the next cycle examines it."""
    examined_at: datetime | None = None
    """When mr-monitor last examined the MR (harness clock), for the stale re-check."""
    merge_status: str = ""
    """``detailed_merge_status`` at the last examination."""
    head_pipeline_id: int = 0
    """The head pipeline at the last examination; while it runs, the MR is re-read each cycle
    (a pipeline finishing does not touch the MR's ``updated_at``)."""
    last_pipeline_id: int = 0
    """The newest finished head pipeline already acted on: it is never acted on again."""
    last_fix_sha: str = ""
    """The sha of the red pipeline the last fix attempt was dispatched for: a red pipeline on
    the same sha (a retry, or a fix run that pushed nothing) is not a new failure."""
    fix_attempts: list[FixAttempt] = Field(default_factory=list)
    """The consecutive fix-ci attempts behind ``fix_ci_attempts`` (cleared by a green pipeline),
    quoted in the escalation DM."""
    recover_attempts: int = 0
    """Consecutive push-recovery dispatches for ``conflict``/``need_rebase``; reset once the MR
    is mergeable again."""
    last_recover_sha: str = ""
    """The MR sha the last push recovery was dispatched for: never twice for the same sha."""
    escalated: bool = False
    """The loop gave up and DMed the operator once; the MR is paused until ``admin: mr resume``
    or ``admin: mr rescan`` (or a green pipeline) re-arms it."""
    handled_notes: dict[str, int] = Field(default_factory=dict)
    """Discussion id → the newest reviewer note id already dispatched (or muted by a pause)."""
    pending: bool = False
    """Work found but not dispatched (held back by the global pause, the dev-agent busy on the
    case, or a second dispatch in one cycle): examined again next cycle even if unchanged."""
    not_found_cycles: int = 0
    """Cycles in a row in which GitLab answered 404 for the MR or its project; at
    ``monitor.drop_after_not_found_cycles`` it is dropped (one 404 may be a blip: a proxy, a
    permission being fixed). Any good answer resets it."""
    adopted: bool = False
    """Watched with ``mr-monitor --watch``, not opened by the harness: its title and
    description are the team's and are never replaced."""
    target_branch: str = ""
    """The MR's target branch at the last examination (a push to it can make it conflict)."""
    held: bool = False
    """Reviewer notes arrived while the MR was paused, escalated or over its review budget:
    none was marked handled, and the MR is read in full again once it may answer."""
    review_rounds: list[datetime] = Field(default_factory=list)
    """When each address_review round was dispatched, within the review budget's window."""
    loop_rounds: list[datetime] = Field(default_factory=list)
    """… of which the rounds that answered a note written after the harness's own reply in its
    discussion (the shape of a reply loop): what ``review_round_budget`` counts."""
    review_budget_noticed: bool = False
    """The "budget spent" notice went out (once on the MR, once to the operator) for the
    current exhaustion."""
    fix_result: FixResult | None = None
    """Written by the dev-agent's fix_ci run; mr-monitor reads it next cycle."""
    fix_result_seen: str = ""
    """The ``fix_result.id`` mr-monitor already acted on."""
    fix_status_ts: str = ""
    """Written by the dev-agent's fix_ci run: its status message in the case thread, which the
    next attempt of the same red streak edits in place instead of posting another (#34 item
    13: four messages for one red MR)."""


class MonitoredMrs(_State):
    """``monitored-mrs.json``: the MRs the harness opened, with their CI status."""

    mrs: dict[str, MonitoredMr] = Field(default_factory=dict)
    cursors: dict[str, str] = Field(default_factory=dict)
    """GitLab project path → the ``updated_after`` of its next MR listing: every change before
    it has been handled. It moves only after a project's listing was handled completely, so a
    cycle cut short by rate limits or a crash resumes where it stopped."""
    bot_username: str = ""
    """The harness's GitLab account (asked once): its notes are replies, never triggers."""
    target_heads: dict[str, str] = Field(default_factory=dict)
    """``<project> <branch>`` → the target branch's head at the last cycle. A push there does
    not touch the MRs' ``updated_at`` but can make them conflict: when it moves, the open MRs
    targeting it are listed once with their merge status."""
    pipeline_cursors: dict[str, str] = Field(default_factory=dict)
    """GitLab project path → the ``updated_after`` of its next pipeline listing: a re-run or a
    finished pipeline does not touch the MR either."""

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


class HeldWork(_State):
    """One dispatch held by the pause, kept to be replayed once it ends."""

    at: datetime
    workflow: str
    case_id: str
    trigger: str
    payload: dict[str, Any]
    """The dispatch payload exactly as it would have been written (``dispatch.Payload``)."""


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
    held_work: list[HeldWork] = Field(default_factory=list)
    """The queue of held dispatches, oldest first: replayed exactly once, in order, when the
    pause ends (``resume``, or its duration running out), and listed by ``status`` until then.
    A new pause does not clear it."""
    auto_monitor_projects: dict[str, bool] = Field(default_factory=dict)
    """``oncall-toggle <project>``: one project's override, above its projects.yaml setting."""


class ChannelCursor(_State):
    oldest: str = "0"
    """The ts the next poll starts from; frozen on empty polls (Slack's read-after-write lag)."""
    empty_polls: int = 0
    updated_at: datetime | None = None
    failing: str = ""
    """The error the channel answered with, once reported to the operator; empty while it reads
    fine. The operator hears again only when it changes."""
    failing_since: datetime | None = None


class SlackCursors(_State):
    """``slack-cursors.json``: one cursor per polled channel, where the thread loop resumes,
    the admin threads, and when this HARNESS_HOME started reading Slack."""

    channels: dict[str, ChannelCursor] = Field(default_factory=dict)
    threads_next: str = ""
    """Thread-map key the next cycle's thread loop starts from (fair polling under a budget)."""
    admin_threads: dict[str, ThreadEntry] = Field(default_factory=dict)
    """Threads under recent admin commands in the self-DM (``role="admin"``)."""
    installed_at: float | None = None
    """Epoch second (Slack's clock, i.e. the wall clock) this HARNESS_HOME was set up; the
    self-DM's admin commands and thread replies older than that are history, not intent."""
    bootstrapped_at: datetime | None = None
    """When intake first ran here and rebuilt its thread maps from the workspace."""
    bootstrap_reported: bool = False
    """The one DM saying what the bootstrap skipped was sent."""
    bootstrap_skipped: list[str] = Field(default_factory=list)
    """What the first cycles skipped as history, for that DM."""


class InFlight(_State):
    """A message recorded as seen and not yet done (see :mod:`harness_cli.intake.lifecycle`)."""

    stage: Literal["seen", "handled"] = "seen"
    """``seen``: recorded, effects may be partial; ``handled``: every effect exists, the
    workspace commit is what is left."""
    owner: str = ""
    """``host:pid:start`` of the run holding the lease; empty once released."""
    leased_at: float = 0.0
    """Wall-clock epoch of the lease; past ``intake_lease_seconds`` any run may take it over."""
    kind: Literal["top", "reply"] = "top"
    thread: str = ""
    """For a reply: the thread-map key of its thread."""
    message: dict[str, Any] = Field(default_factory=dict)
    """The message as Slack gave it, so a takeover needs no re-read."""
    attempts: int = 0
    """Handling attempts that failed; past ``intake_max_attempts`` the message is parked."""
    leases: int = 0
    """Leases taken on it: more than one means a run before this one got that far (a takeover
    or a retry), so its effects may partly exist already."""
    error: str = ""


class DedupSet(_State):
    """``socket-dedup``: the per-message ledger shared by ``listen`` and ``poll-slack``.

    ``done`` holds the keys whose every effect exists (value: the harness-clock epoch second
    they were done — an int: the file is read every minute and ints parse fast), ``inflight``
    the ones seen and not yet done, ``parked`` the ones given up on after too many failures
    (the operator was told)."""

    schema_version: int = 2
    done: dict[str, int] = Field(default_factory=dict)
    inflight: dict[str, InFlight] = Field(default_factory=dict)
    parked: dict[str, InFlight] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_v1(cls, data: Any) -> Any:
        """Version 1 kept ``seen`` (key → expiry): those keys are done."""
        if isinstance(data, dict) and "seen" in data and "done" not in data:
            seen = data["seen"] if isinstance(data["seen"], dict) else {}
            data = {**data, "done": {k: int(v) for k, v in seen.items()}, "schema_version": 2}
            data.pop("seen")
        return data
