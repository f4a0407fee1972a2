"""The outbox at the one door out (#20 Build, first bullet), against the Slack emulator through
the real slack_sdk: an owed post survives a 429 storm and a 5xx, is delivered exactly once by a
later run, a post whose answer was lost is found again instead of being posted twice, and one
that never gets through is given up after its attempts and told once by another path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness_cli import wiring
from harness_cli.config import load_config
from harness_cli.outbox import flush, ledger, scope
from harness_cli.outbox.slack_door import Owed
from harness_cli.sandbox.httpbase import Fault

DM = "D0SELF"


@pytest.fixture
def door(slack_emu: Any, harness_ready: Path) -> Any:
    return wiring.outbound(load_config())


def _posts(emu: Any, text: str) -> list[dict[str, Any]]:
    return [m for m in emu.messages(DM) if m["text"] == text]


def _storm(emu: Any, retry_after: int, times: int = -1) -> None:
    emu.add_fault(Fault(kind="status", match="chat.postMessage", status=429,
                        headers={"Retry-After": str(retry_after)}, times=times))  # fmt: skip


def test_a_429_longer_than_the_run_can_wait_leaves_the_post_owed_and_a_later_run_delivers_it(
    door: Any, slack_emu: Any
) -> None:
    _storm(slack_emu, 60)
    with scope.opened("investigate:AAA-1:r1", "AAA-1"), pytest.raises(Owed):
        door.post(DM, "the draft", purpose="investigation_result")
    [owed] = ledger.owed("AAA-1")
    assert owed.attempts == 1 and not owed.inflight and _posts(slack_emu, "the draft") == []
    flush.flush(door, self_dm=DM)  # Slack still limiting: nothing posted, still owed
    assert _posts(slack_emu, "the draft") == [] and len(ledger.owed("AAA-1")) == 1
    slack_emu.control("clear_faults", {})
    report = flush.flush(door, self_dm=DM)
    assert report.delivered == [owed.key] and len(_posts(slack_emu, "the draft")) == 1
    flush.flush(door, self_dm=DM)
    # The killed run resumed in the same scope finds its post done: nothing is posted again.
    with scope.opened("investigate:AAA-1:r1", "AAA-1"):
        ts = door.post(DM, "the draft", purpose="investigation_result")
    [post] = _posts(slack_emu, "the draft")
    assert ts == post["ts"] and ledger.owed() == []


def test_a_short_retry_after_is_waited_out_in_the_run_itself(door: Any, slack_emu: Any) -> None:
    _storm(slack_emu, 1, times=2)
    with scope.opened("followup:AAA-2:r1", "AAA-2"):
        ts = door.post(DM, "the answer", purpose="memory")
    assert [m["ts"] for m in _posts(slack_emu, "the answer")] == [ts]
    assert slack_emu.calls("chat.postMessage") == 3 and ledger.owed() == []


def test_a_post_whose_answer_was_lost_is_found_again_not_posted_twice(
    door: Any, slack_emu: Any
) -> None:
    slack_emu.add_fault(Fault(kind="lost", match="chat.postMessage", times=1))
    parent = slack_emu.post_as(DM, "U0OPERATOR", "case *AAA-3*")["ts"]
    with scope.opened("dev-agent:AAA-3:r1", "AAA-3"), pytest.raises(Owed):
        door.post(DM, "MR opened: !1", thread_ts=parent, purpose="mr_opened")
    [owed] = ledger.owed("AAA-3")
    assert owed.inflight  # it may have landed: the next attempt looks first
    flush.flush(door, self_dm=DM)
    replies = [
        m for m in slack_emu.messages(DM) if m.get("thread_ts") == parent and m["ts"] != parent
    ]
    assert [m["text"] for m in replies] == ["MR opened: !1"]
    assert slack_emu.calls("chat.postMessage") == 1 and ledger.owed() == []
    [done] = [o for o in ledger._scan(ledger.root() / "done") if o.key == owed.key]
    assert done.result == replies[0]["ts"]


def test_an_owed_post_is_given_up_after_its_attempts_and_the_operator_is_told_once(
    door: Any, slack_emu: Any, tmp_path: Path
) -> None:
    door.limits = door.limits.model_copy(update={"outbox_max_attempts": 3})
    slack_emu.add_fault(Fault(kind="status", match="chat.postMessage", status=500,
                              where={"thread_ts": "1.000001"}, times=-1))  # fmt: skip
    with scope.opened("finalize:AAA-4:r1", "AAA-4"), pytest.raises(Owed):
        door.post(DM, "finalize result", thread_ts="1.000001", purpose="finalize")
    for _ in range(4):
        flush.flush(door, self_dm=DM)
    assert ledger.owed() == [] and len(ledger.given_up()) == 1
    notices = [m for m in slack_emu.messages(DM) if "I gave up delivering 1 message" in m["text"]]
    assert len(notices) == 1 and not notices[0].get("thread_ts")  # another path: top level
    assert "AAA-4" in notices[0]["text"] and "finalize post" in notices[0]["text"]
    assert "owed_write_given_up" in (tmp_path / "harness-home" / "logs" / "error.log").read_text()
    assert flush.summary()["given_up"] == 1
