"""Terminal-event DMs: each goes to the operator's self-DM, threaded under the case's thread
when the case has one, top level otherwise, and leaves a ``notified`` event in agent.log."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness_cli import paths, wiring
from harness_cli.config import Config, load_config
from harness_cli.outbox import notify
from harness_cli.outbox.outbound import Outbound

CASE = "AAA-42"


@pytest.fixture
def ticket_case(cli: Any, harness_ready: Path, slack_emu: Any) -> Any:
    """A real ticket through intake, which opens the case and its thread in the self-DM."""
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{CASE} checkout returns 500")
    code, _, err = cli("poll-slack")
    assert code == 0, err
    [thread] = slack_emu.messages("D0SELF")
    return thread


@pytest.fixture
def ops(harness_ready: Path) -> tuple[Outbound, Config]:
    cfg = load_config(harness_ready)
    return wiring.outbound(cfg), cfg


EVENTS: dict[str, Callable[[Outbound, Config, str], str]] = {
    "mr_opened": lambda o, c, case: notify.mr_opened(
        o, c, case_id=case, web_url="http://gl/acme/x/-/merge_requests/3", draft=True
    ),
    "mr_merged": lambda o, c, case: notify.mr_merged(o, c, case_id=case, mr="acme/x!3"),
    "ci_escalation": lambda o, c, case: notify.ci_escalation(
        o, c, case_id=case, text="acme/x!3: CI is still red after 3 fix attempts"
    ),
    "push_escalation": lambda o, c, case: notify.push_escalation(
        o, c, case_id=case, text=":rotating_light: Push needs you"
    ),
    "idp_expired": lambda o, c, case: notify.idp_expired(
        o, c, what="the SSO session", runbook="1. sso-login\n2. tap the key", case_id=case
    ),
}


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_each_terminal_event_is_threaded_under_its_case(
    kind: str, ticket_case: dict[str, Any], ops: tuple[Outbound, Config], slack_emu: Any
) -> None:
    out, cfg = ops
    ts = EVENTS[kind](out, cfg, CASE)
    message = slack_emu.messages("D0SELF")[-1]
    assert message["ts"] == ts and message["thread_ts"] == ticket_case["ts"]
    assert slack_emu.calls("chat.postMessage", channel="C0SUPPORT") == 0
    logged = [
        json.loads(line)
        for line in (paths.logs_dir() / "agent.log").read_text().splitlines()
        if '"notified"' in line
    ]
    assert logged[-1]["kind"] == kind and logged[-1]["threaded"] is True


def test_without_a_case_thread_the_dm_goes_top_level(
    slack_emu: Any, ops: tuple[Outbound, Config]
) -> None:
    out, cfg = ops
    notify.mr_merged(out, cfg, case_id="BBB-1", mr="acme/x!9", detail="Worktree removed.")
    [message] = slack_emu.messages("D0SELF")
    assert "thread_ts" not in message
    assert message["text"].startswith("*BBB-1*: :tada: acme/x!9 merged. Worktree removed.")


def test_the_identity_provider_dm_carries_the_runbook_and_a_default_when_there_is_none(
    slack_emu: Any, ops: tuple[Outbound, Config]
) -> None:
    out, cfg = ops
    notify.idp_expired(out, cfg, what="GitLab MCP", runbook="okta-login --hw")
    notify.idp_expired(out, cfg, what="GitLab MCP", runbook="  ")
    first, second = slack_emu.messages("D0SELF")
    assert "okta-login --hw" in first["text"] and "does not renew it" in first["text"]
    assert notify.DEFAULT_IDP_RUNBOOK.splitlines()[0] in second["text"]
