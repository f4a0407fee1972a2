"""A new ticket: its case opened (or found again on a redelivery), its Jira issue read, its
case thread started in the operator's self-DM and its investigation dispatched. Reached from a
support channel's top-level message (:mod:`messages`) and from ``admin: oncall run <link>``
(:mod:`admin`), so it imports neither."""

from __future__ import annotations

import logging

from harness_cli.config import all_jira_prefixes, extract_jira_key, resolve_project
from harness_cli.dispatch.payload import Trigger
from harness_cli.errors import ServiceError
from harness_cli.faults import crash_point
from harness_cli.intake import case_thread, jira_source, pause
from harness_cli.intake.context import BudgetExhausted, Intake
from harness_cli.logs import event
from harness_cli.services.slack import Message
from harness_cli.workspace import registry
from harness_cli.workspace.case import Source, derive_case_id

log = logging.getLogger("harness.intake")


def open_ticket(
    ctx: Intake, channel: str, message: Message, *, trigger_kind: str, trigger_ts: str = ""
) -> str:
    """A ticket → its case (dir, message.json, case.json, thread maps, a case thread in the
    self-DM) → ``investigate`` when auto-monitor is on. Returns the case id.

    Idempotent, and safe to redo after a crash at any step: each effect is keyed (see
    :mod:`harness_cli.intake.lifecycle`). A ticket seen for the first time whose case already
    exists — another machine's, or a second ticket naming the same Jira key — joins that case
    and starts nothing; only a redelivery of the case's own originating message (a run died
    half way) goes on to the dispatch, which the payload key makes happen once."""
    ts, user, text = str(message["ts"]), str(message.get("user", "")), str(message.get("text", ""))
    jira = extract_jira_key(text, all_jira_prefixes(ctx.cfg.projects))
    project = resolve_project(ctx.cfg.projects, jira_key=jira, channel=channel)
    case_id = registry.case_by_source(channel, ts) or derive_case_id(
        jira=jira, channel=channel, ts=ts
    )
    linked_to = ""
    if case_id == jira and registry.is_closed(case_id):
        # A closed case is not reopened from outside: this ticket is a new case, linked to it.
        linked_to, case_id = case_id, derive_case_id(jira=None, channel=channel, ts=ts)
    permalink = _permalink(ctx, channel, ts)
    opened = registry.open_case(
        ctx.cfg.harness.thresholds,
        case_id=case_id,
        project=project,
        title=_title(text),
        kind="oncall",
        jira=jira,
        message={**message, "channel": channel, "permalink": permalink},
        source=Source(channel=channel, thread_ts=ts, user=user, permalink=permalink),
        sync_now=not ctx.deferred,
        linked_to=linked_to,
    )
    project = opened.case.project
    if opened.case.linked_to:
        registry.link_cases(opened.case.linked_to, case_id, ctx.cfg.harness.thresholds,
                            sync_now=not ctx.deferred)  # fmt: skip
    linked = (
        f"\nIt names {opened.case.linked_to}, which is closed: a new case, linked to it "
        f"(`admin: reopen {opened.case.linked_to}` to work on the old one instead)."
        if opened.case.linked_to
        else ""
    )
    registry.register_thread(opened.case, channel=channel, thread_ts=ts, role="ticket")
    crash_point("intake.thread_map")
    jira_note, jira_waits = _read_jira(ctx, opened, jira)
    linked += jira_note
    if trigger_kind not in pause.OPERATOR and pause.is_paused():
        # #34 item 15: the operator hears of the ticket now and of its start only later
        linked += "\nHeld: the harness is paused; `admin: oncall resume` starts its investigation."
    own = opened.case.source.channel == channel and opened.case.source.thread_ts == ts
    case_thread.ensure(
        ctx,
        opened.case,
        text=f"New ticket in <#{channel}> → {case_thread.marker(case_id)} ({project})\n"
        f"{permalink}\n> {_title(text, 300)}{linked}",
        fresh=opened.created,
        since=ts,
    )
    if opened.created:
        ctx.tally.new_cases.append(case_id)
        event(log, "ticket_opened", case_id=case_id, project=project, channel=channel, ts=ts)
    elif trigger_kind == "new_ticket" and not (own and ctx.redelivery):
        # Already held as a case: by another machine (or an earlier install), or this is a
        # second ticket naming the same Jira key. It joins the case; nothing new starts.
        ctx.tally.recognised.append(case_id)
        return case_id
    if jira_waits:
        jira_source.wait(
            case_id, ctx.cfg.harness.thresholds, jira_waits, {
                "workflow": "investigate",
                "trigger": {"kind": trigger_kind, "ts": trigger_ts or ts, "user": user},
                "channel": channel, "thread_ts": ts,
            } if trigger_kind == "admin_command" or ctx.auto_monitor(project) else {},
            sync_now=not ctx.deferred,
        )  # fmt: skip
        ctx.tally.ignored.append(f"{case_id}: waits for Jira ({jira_waits[:80]})")
    elif trigger_kind == "admin_command" or ctx.auto_monitor(project):
        ctx.start(
            "investigate",
            case_id=case_id,
            case_dir=str(opened.dir),
            trigger=Trigger(kind=trigger_kind, ts=trigger_ts or ts, user=user),
            channel=channel,
            thread_ts=ts,
        )
    else:
        ctx.tally.ignored.append(f"{case_id}: auto-monitor off for {project}")
    return case_id


def _read_jira(ctx: Intake, opened: registry.Opened, key: str | None) -> tuple[str, str]:
    """A ticket naming a key of a configured prefix gets the issue attached (#30). Returns
    (a line for the case thread's opening post, the error the case waits on — "" when none)."""
    if key is None or ctx.jira is None or opened.case.jira != key:
        return "", ""
    if jira_source.attached(opened.dir) and not opened.case.jira_wait:
        return "", ""  # a redelivery: read already
    got = jira_source.read(ctx.jira, key)
    if got.issue is not None:
        jira_source.attach(opened.case.id, got.issue)
        return f"\nJira {key}: {got.issue.summary} ({got.issue.status}) — attached.", ""
    if got.unknown:
        return f"\n{key} is not an issue in Jira: the ticket's own text is all there is.", ""
    return (
        f"\nJira did not answer for {key} ({got.error}): the investigation waits for the "
        "issue; each poll-slack cycle tries again.",
        got.error,
    )


def _permalink(ctx: Intake, channel: str, ts: str) -> str:
    """A link for the operator; without one the case still opens (the ts identifies it)."""
    try:
        return ctx.call(lambda: ctx.slack.permalink(channel, ts))
    except BudgetExhausted:
        raise
    except ServiceError as exc:
        event(
            log, "permalink_unavailable", logging.WARNING, channel=channel, ts=ts, error=exc.line()
        )
        return f"{channel}/{ts}"


def _title(text: str, limit: int = 80) -> str:
    first = " ".join((text or "").split())
    return first if len(first) <= limit else first[: limit - 1] + "…"
