"""Where a memory workflow speaks: the case thread in the operator's self-DM, through the one
door out (``Outbound``). Never the ticket's own thread: "the agent speaks outward only through
the operator's mailbox"."""

from __future__ import annotations

import logging

from harness_cli.config import Config
from harness_cli.errors import HarnessError
from harness_cli.logs import event
from harness_cli.outbox.outbound import Outbound
from harness_cli.state.models import ThreadEntry
from harness_cli.workspace.registry import case_thread as lookup

log = logging.getLogger("harness.memory")


def case_thread(case_id: str, kind: str) -> ThreadEntry | None:
    """The case's thread in the self-DM (either map; ``kind`` is kept for callers)."""

    return lookup(case_id)


def post_to_case(cfg: Config, out: Outbound, case_id: str, kind: str, text: str) -> str:
    """Post in the case thread; a case without one gets a top-level self-DM message naming it."""
    thread = case_thread(case_id, kind)
    dm = cfg.harness.operator.self_dm_channel
    if thread is None:
        return out.post(dm, f"*{case_id}*: {text}", purpose="memory")
    return out.post(dm, text, thread_ts=thread.thread_ts, purpose="memory")


def tell_operator(cfg: Config, out: Outbound | None, case_id: str, kind: str, text: str) -> bool:
    """A notice that must not fail the workflow that sends it (the refusal is already logged):
    a Slack failure is logged and reported as False."""
    if out is None:
        return False
    try:
        post_to_case(cfg, out, case_id, kind, text)
    except HarnessError as exc:
        event(log, "operator_notice_failed", logging.WARNING, case_id=case_id, error=exc.line())
        return False
    return True
