"""Terminal-event DMs: one function per event, each a first-class operator notification.

Reference, Layer 5: "Slack DMs for terminal events, such as an MR opening, an MR merging, an
expired identity-provider session or a CI escalation. They count as first-class operator
notifications and are threaded under the case where one applies." Every DM goes through
``Outbound`` to the operator's self-DM — in the case's thread when the case has one, else
top level — and leaves a ``notified`` event in agent.log.
"""

from __future__ import annotations

import logging

from harness_cli.config import Config
from harness_cli.cost.meter import spend_line
from harness_cli.logs import event
from harness_cli.outbox.outbound import Outbound
from harness_cli.outbox.slack_door import Owed
from harness_cli.state.models import ThreadEntry
from harness_cli.workspace.registry import case_thread as lookup

log = logging.getLogger("harness.notify")


def case_thread(case_id: str) -> ThreadEntry | None:
    """The case's own thread in the operator's self-DM (either map), if it has one."""

    return lookup(case_id)


def with_case(case_id: str, text: str) -> str:
    """#16: every message about a case names it, threaded or not (a DM read out of context, or
    forwarded, still says which case)."""
    return text if case_id in text else f"*{case_id}*: {text}"


TERMINAL = frozenset({"mr_opened", "mr_merged", "ci_escalation", "push_escalation",
                      "budget_reached", "dev_agent_outcome"})  # fmt: skip
"""The kinds that end a workflow: they carry the cost line (``cost.meter.spend_line``)."""


def dm(
    out: Outbound,
    cfg: Config,
    kind: str,
    text: str,
    *,
    case_id: str | None = None,
    terminal: bool = False,
    key: str | None = None,
) -> str:
    """Post one notification — in the case's thread when it has one, naming the case; returns
    its ts ("" when Slack refused it for now: it is owed, and a later run delivers it). A
    message that ends a workflow or an MR (a ``TERMINAL`` kind, or ``terminal``) also carries
    the cost line: this run's spend and the case's so far (#18). ``key`` names the event it is
    about when one run may tell several of the same kind."""

    if case_id:  # named before the cost line is added: that line names the case too
        text = with_case(case_id, text)
    if terminal or kind in TERMINAL:
        line = spend_line(case_id)
        text = f"{text}\n{line}" if line else text
    channel = cfg.harness.operator.self_dm_channel
    thread = case_thread(case_id) if case_id else None
    try:
        if thread is not None and thread.channel == channel:
            ts = out.post(channel, text, thread_ts=thread.thread_ts, purpose=kind, key=key)
        else:
            ts = out.post(channel, text, purpose=kind, key=key)
    except Owed as exc:  # recorded: the next run delivers it (#20 point 1)
        event(log, "notification_owed", logging.WARNING, kind=kind, case_id=case_id or "",
              error=exc.line())  # fmt: skip
        return ""
    event(
        log,
        "notified",
        kind=kind,
        case_id=case_id or "",
        threaded=thread is not None,
        ts=ts,
    )
    return ts


def mr_opened(
    out: Outbound,
    cfg: Config,
    *,
    case_id: str,
    web_url: str,
    adopted: bool = False,
    draft: bool = False,
) -> str:
    text = f"MR {'updated' if adopted else 'opened'}: {web_url}" + (
        " (draft: acceptance has not passed on its head)" if draft else ""
    )
    return dm(out, cfg, "mr_opened", text, case_id=case_id)


def budget_reached(out: Outbound, cfg: Config, *, case_id: str, text: str) -> str:
    """A budget ended a workflow run (``cost.budgets``): what was spent and how to go on."""
    return dm(out, cfg, "budget_reached", text, case_id=case_id)


def mr_merged(out: Outbound, cfg: Config, *, case_id: str, mr: str, detail: str = "") -> str:
    text = f":tada: {mr} merged." + (f" {detail}" if detail else "")
    return dm(out, cfg, "mr_merged", text, case_id=case_id)


def ci_escalation(out: Outbound, cfg: Config, *, case_id: str, text: str) -> str:
    """mr-monitor's "three consecutive failures escalate to the operator" (its text carries
    the attempts)."""
    return dm(out, cfg, "ci_escalation", text, case_id=case_id)


def push_escalation(out: Outbound, cfg: Config, *, case_id: str, text: str) -> str:
    """L3 of push recovery: the whole L2 trail, composed by delivery.push.escalation."""
    return dm(out, cfg, "push_escalation", text, case_id=case_id)


def idp_expired(
    out: Outbound,
    cfg: Config,
    *,
    what: str,
    runbook: str,
    case_id: str | None = None,
) -> str:
    """Reference, Layer 4: "Refreshing the identity-provider session needs a hardware-bound
    MFA prompt, so the agent halts and asks for human action, putting a 30-second runbook in
    the DM." The step is the human's; nothing here tries it."""
    text = (
        f":key: Identity-provider session expired ({what}). It needs you — the harness does "
        "not renew it.\n" + (runbook.strip() or DEFAULT_IDP_RUNBOOK)
    )
    return dm(out, cfg, "idp_expired", text, case_id=case_id)


def mcp_needs_reauth(
    out: Outbound, cfg: Config, *, server: str, fix: str, detail: str, auth: bool
) -> str:
    """mcp-watch: the silent refresh did not bring the server back."""
    head = f"{server} MCP needs reauth" if auth else f"{server} MCP is failing its health check"
    text = f":electric_plug: {head}.\nWhat failed: {detail}\nFix: {fix}"
    return dm(out, cfg, "mcp_needs_reauth", text)


def mcp_recovered(out: Outbound, cfg: Config, *, server: str, thread_ts: str | None) -> str:
    """Said once, under the reauth DM when there is one."""
    channel = cfg.harness.operator.self_dm_channel
    ts = out.post(
        channel, f":white_check_mark: {server} MCP is healthy again.", thread_ts=thread_ts
    )
    event(log, "notified", kind="mcp_recovered", server=server, ts=ts)
    return ts


DEFAULT_IDP_RUNBOOK = (
    "1. Run your identity provider's login (with the hardware key) on the harness machine.\n"
    "2. Approve the MFA prompt within its 15-minute window.\n"
    "3. Nothing else: the next `harness mcp-watch` cycle checks it and says when it is back."
)
"""Used when the server's ``runbook`` in mcp.json is empty."""
