"""#34 item 2: every dev-agent failure message names the case's true status and one command
that works from Slack (`admin: retry`), and a run a cycle starts again is said in the thread.

Before: a run that failed before it began (here: the repository could not be cloned; on the
first day: no git identity) left the case `approved` while the message said `failed` and sent
the operator to `admin: reopen` then `admin: task` — both refused; only a shell moved it."""

from __future__ import annotations

import json
from typing import Any

from tests.delivery.desk import SELF_DM, Desk


def _admin(desk: Desk, text: str) -> dict[str, Any]:
    desk.box.slack.post_as(SELF_DM, "U0OPERATOR", f"admin: {text}")
    data: dict[str, Any] = desk.harness("poll-slack")["data"]
    return data


def _answer(desk: Desk) -> str:
    return str(desk.harness_posts()[-1]["text"])


def test_a_run_that_fails_before_it_begins_names_approved_and_retry_works(desk: Desk) -> None:
    desk.force_ci("success", times=4)
    desk.approved_case("WAY-1")
    bare = desk.bare()
    hidden = bare.with_name(bare.name + ".away")
    bare.rename(hidden)  # the clone fails before the run moves the case
    failed = desk.task("WAY-1", expect=None)
    assert failed["exit"] != 0
    assert desk.status("WAY-1") == "approved"
    [told] = [p["text"] for p in desk.harness_posts() if "WAY-1" in p["text"]][-1:]
    assert "The case is `approved`" in told and "`admin: retry WAY-1`" in told
    assert "`failed`" not in told and "admin: reopen" not in told

    hidden.rename(bare)  # the cause is fixed; the operator answers from Slack only
    _admin(desk, "retry WAY-1")
    assert "WAY-1: dev-agent started again" in _answer(desk)
    [planned] = desk.run_dispatched()
    assert planned["data"]["state"] == "plan_waiting_for_operator"
    _admin(desk, "task WAY-1")  # the plan's own "reply `admin: task` to let me implement it"
    [result] = desk.run_dispatched()
    assert result["data"]["mr"]["iid"] == 1
    assert desk.status("WAY-1") == "mr_open"


def test_a_task_that_delivers_nothing_names_failed_and_retry_works(desk: Desk) -> None:
    desk.approved_case("NOTHING-2")
    result = desk.task("NOTHING-2", expect=None)
    assert desk.status("NOTHING-2") == "failed"
    text = result["data"]["message"]
    assert "The case is `failed`: `admin: retry NOTHING-2`" in text
    _admin(desk, "retry NOTHING-2")
    assert "NOTHING-2: dev-agent started again" in _answer(desk)
    assert desk.status("NOTHING-2") == "approved"
    [(_, payload)] = desk.payloads("task")
    assert payload["case_id"] == "NOTHING-2"


def test_a_run_started_again_by_a_cycle_is_said_in_the_case_thread(desk: Desk) -> None:
    """A dispatched payload whose run never began is adopted by the next cycle: the thread
    hears it (before: only the log did)."""
    import os
    import time

    desk.approved_case("ADOPT-1")
    _admin(desk, "retry ADOPT-1")
    [(path, _)] = desk.payloads("task")
    old = time.time() - 3600
    os.utime(path, (old, old))  # its process died at start-up an hour ago
    before = len(desk.harness_posts())
    desk.harness("poll-slack")
    said = [p["text"] for p in desk.harness_posts(before)]
    assert any("ADOPT-1" in t and "started it again" in t for t in said), json.dumps(said)
