"""#20 point 1, end to end: a Slack 429 storm during a workflow's final post. Before, the case
moved on, the post failed, the run exited 1 and nothing ever posted it: the operator was never
asked. Now the post is owed: delivered within the run when Slack's Retry-After is short, by the
next poll-slack cycle once Slack recovers when it is long — exactly once either way."""

from __future__ import annotations

from typing import Any

import pytest

from harness_cli.sandbox.httpbase import Fault
from tests.investigation.conftest import CASE, TICKET, Investigation


def _storm(emu: Any, retry_after: int, times: int = -1) -> None:
    emu.add_fault(Fault(kind="status", match="chat.postMessage", status=429,
                        headers={"Retry-After": str(retry_after)}, times=times))  # fmt: skip


def _drafts(emu: Any, thread_ts: str) -> list[dict[str, Any]]:
    return [
        m for m in emu.messages("D0SELF")
        if m.get("thread_ts") == thread_ts and m["text"].startswith("`exit=complete")
    ]  # fmt: skip


@pytest.mark.parametrize("retry_after", [60, 1])
def test_a_429_storm_during_the_investigations_post_delivers_the_draft_exactly_once(
    inv: Investigation, slack_emu: Any, retry_after: int
) -> None:
    inv.script("inv_honest")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    assert inv.cli("poll-slack")[0] == 0
    [thread] = slack_emu.messages("D0SELF")
    _storm(slack_emu, retry_after, times=-1 if retry_after > 10 else 2)

    data = inv.investigate(post=True)  # exit 0: the result is made, its post is owed

    assert data["status"] == "awaiting_approval"
    if retry_after > 10:
        assert data["posted_ts"] is None and "not delivered yet" in data["owed"]
        assert _drafts(slack_emu, thread["ts"]) == []
        slack_emu.control("clear_faults", {})
        assert inv.cli("poll-slack")[0] == 0  # Slack is back: the next cycle delivers it
    [draft] = _drafts(slack_emu, thread["ts"])
    assert data["exit_line"] in draft["text"] and "to approve" in draft["text"]
    for _ in range(2):  # and no later cycle posts it again
        assert inv.cli("poll-slack")[0] == 0
    assert len(_drafts(slack_emu, thread["ts"])) == 1
