"""Jira as a hand (#30), the reference's 95+ rule, through the CLI on the Slack, Jira and
Anthropic emulators with the real runtime: after `exit=complete` at ≥ 95 the harness itself
posts the Jira comment and makes the transition the report proposes — exactly once, under
SIGKILL at each write step and under a lost answer — and reports each in the case thread;
below 95 they are drafts the operator runs with one command; a destructive action or a
production write never runs without the operator confirming that one command.

Before, these actions were listed in TASK.md under "May run by itself" and never ran."""

from __future__ import annotations

import json
import signal
import subprocess
from typing import Any

import pytest

from harness_cli.faults import ENV
from harness_cli.services.jira import PROPERTY
from tests.investigation.conftest import CASE, TICKET, Investigation
from tests.obligations.campaign import FULL, assert_clean, harness, record

ISSUE = {
    "key": CASE,
    "summary": "Bulk discount missing at exactly 10 units",
    "description": "Customer ORD-42: 10 x 5.00 charged 50.00; the price list promises 10 % off.",
}
COMMENT = "Root cause found: the bulk discount compares with > instead of >=."


@pytest.fixture
def world(inv: Investigation, slack_emu: Any, jira_emu: Any) -> tuple[Investigation, Any, Any]:
    jira_emu.control("seed", {"issues": [ISSUE], "users": [{"name": "alex"}]})
    return inv, slack_emu, jira_emu


def _opened(inv: Investigation, slack_emu: Any, confidence: str = "96") -> str:
    inv.script("inv_jira_actions", confidence=confidence)
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    assert inv.cli("poll-slack")[0] == 0
    [thread] = [m for m in slack_emu.messages("D0SELF") if not m.get("thread_ts")]
    return str(thread["ts"])


def _ours(jira_emu: Any) -> list[dict[str, Any]]:
    """The comments the harness made: those carrying its outbox key."""
    comments = jira_emu.issue(CASE).comments
    return [{"body": c.body} for c in comments if PROPERTY in c.properties]


def _status(jira_emu: Any) -> str:
    return str(jira_emu.issue(CASE).status)


def _assignee(jira_emu: Any) -> str | None:
    value = jira_emu.issue(CASE).assignee
    return str(value) if value else None


def _reports(slack_emu: Any, thread_ts: str, word: str = "Ran action") -> list[str]:
    return [
        m["text"] for m in slack_emu.messages("D0SELF")
        if m.get("thread_ts") == thread_ts and m["text"].startswith(word)
    ]  # fmt: skip


def _figures(slack_emu: Any, jira_emu: Any, thread_ts: str) -> dict[str, Any]:
    comments, reports = _ours(jira_emu), _reports(slack_emu, thread_ts)
    moved = _status(jira_emu) == "In Review"
    return {
        "duplicates": max(0, len(comments) - 1) + max(0, len(reports) - 2),
        "lost": int(not comments) + int(not moved) + max(0, 2 - len(reports)),
        "unasked": int(_assignee(jira_emu) is not None),  # the destructive one never ran
        "detail": [c["body"][:40] for c in comments] + reports + [_status(jira_emu)],
    }


def test_at_95_the_harness_comments_and_transitions_once_and_lists_the_drafts(
    world: tuple[Investigation, Any, Any],
) -> None:
    inv, slack_emu, jira_emu = world
    thread_ts = _opened(inv, slack_emu)
    data = inv.investigate(post=True)
    assert data["exit"] == "complete" and data["confidence"] >= 95, data
    # the investigation read the issue the ticket names (the harness attached it)
    assert "price list promises 10 % off" in json.dumps(inv.requests("investigator")[0])
    [comment] = _ours(jira_emu)
    assert comment["body"].startswith(COMMENT)
    assert _status(jira_emu) == "In Review" and _assignee(jira_emu) is None
    reports = _reports(slack_emu, thread_ts)
    assert len(reports) == 2 and "comment on AAA-101" in reports[0], reports
    assert "move AAA-101 to In Review" in reports[1]
    [drafts] = _reports(slack_emu, thread_ts, "For you to decide")
    assert "`admin: run AAA-101 4`" in drafts and "`admin: run AAA-101 5`" in drafts
    assert "`admin: run AAA-101 1`" not in drafts  # prose: in TASK.md, nothing to run
    assert "production write: needs --confirm" in drafts and "destructive" in drafts
    task = (inv.case_dir() / "TASK.md").read_text()
    assert "(#2)" in task and "→ `admin: run AAA-101 5`" in task
    assert inv.cli("poll-slack")[0] == 0  # a later cycle does nothing again
    assert_clean(_figures(slack_emu, jira_emu, thread_ts))


def test_below_95_every_action_is_a_draft_the_operator_runs_with_one_command(
    world: tuple[Investigation, Any, Any],
) -> None:
    inv, slack_emu, jira_emu = world
    thread_ts = _opened(inv, slack_emu, confidence="90")
    inv.investigate(post=True)
    assert not _ours(jira_emu) and _status(jira_emu) == "To Do"
    [drafts] = _reports(slack_emu, thread_ts, "For you to decide")
    assert "`admin: run AAA-101 2`" in drafts and "`admin: run AAA-101 3`" in drafts
    code, out, err = inv.cli("admin", "--dry-run", "run AAA-101 2")  # says, writes nothing
    assert code == 0 and "would comment on Jira AAA-101: Root cause found" in out + err
    assert not _ours(jira_emu)
    command = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: run AAA-101 2")
    assert inv.cli("poll-slack")[0] == 0
    assert len(_ours(jira_emu)) == 1
    answers = [m["text"] for m in slack_emu.messages("D0SELF")
               if m.get("thread_ts") == command["ts"]]  # fmt: skip
    assert any("Ran action 2 on your command" in a for a in answers), answers
    code, out, err = inv.cli("admin", "run AAA-101 2")  # again: found, not made twice
    assert code == 0, err
    assert len(_ours(jira_emu)) == 1
    code, out, _ = inv.cli("admin", "run AAA-101 3")
    assert code == 0 and _status(jira_emu) == "In Review", out
    code, out, err = inv.cli("admin", "run AAA-101 9")
    assert code == 2 and "AAA-101 has no action 9" in err


def test_destructive_and_production_writes_never_run_without_confirmation(
    world: tuple[Investigation, Any, Any],
) -> None:
    inv, slack_emu, jira_emu = world
    _opened(inv, slack_emu)
    inv.investigate(post=True)  # at 96: the destructive assignment did not run by itself
    assert _assignee(jira_emu) is None
    code, out, _ = inv.cli("admin", "run AAA-101 4")
    assert code == 0 and "is destructive" in out and "--confirm" in out
    assert _assignee(jira_emu) is None
    code, out, _ = inv.cli("admin", "run AAA-101 5")
    assert "writes to a production system" in out and "Nothing ran" in out
    code, out, _ = inv.cli("admin", "run AAA-101 4 --confirm")
    assert code == 0 and _assignee(jira_emu) is not None, out
    code, out, _ = inv.cli("admin", "run AAA-101 5 --confirm")
    assert "not one the harness can run" in out  # no DB hand: the operator carries it out
    code, _, err = inv.cli("admin", "run AAA-101 four")
    assert "usage: run <case> <n>" in err + _


STEPS = (
    ["outbox.jira_attempting:1", "outbox.jira_landed:1", "outbox.jira_attempting:2",
     "outbox.jira_landed:2", "run.investigate.published", "outbox.landed:3"]
    if FULL else ["outbox.jira_attempting:1", "outbox.jira_landed:1", "outbox.jira_landed:2"]
)  # fmt: skip
"""The write steps of the actions: the comment (1) and the transition (2) in flight and
landed-but-not-recorded; the published checkpoint; the first action's report."""


@pytest.mark.parametrize("point", STEPS)
def test_auto_run_killed_at_each_write_step_is_finished_exactly_once(
    world: tuple[Investigation, Any, Any], point: str
) -> None:
    inv, slack_emu, jira_emu = world
    thread_ts = _opened(inv, slack_emu)
    proc = harness("investigate", CASE, "--json", env={ENV: point}, stdout=subprocess.PIPE)
    _, err = proc.communicate(timeout=120)
    killed = proc.returncode == -signal.SIGKILL
    assert killed, (point, proc.returncode, err.decode()[-800:])
    inv.script("inv_jira_actions", confidence="96")
    proc = harness("investigate", CASE, "--json", stdout=subprocess.PIPE)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-1500:]
    assert json.loads(out)["data"]["status"] == "awaiting_approval"
    assert inv.cli("poll-slack")[0] == 0
    figures = _figures(slack_emu, jira_emu, thread_ts)
    record("jira-hand", point, {"killed": int(killed), **figures})
    assert_clean(figures)


@pytest.mark.parametrize("match", ["/comment", "/transitions"])
def test_a_lost_answer_is_found_by_its_key_and_never_written_twice(
    world: tuple[Investigation, Any, Any], match: str
) -> None:
    """Jira did the write and the answer never came: the run leaves it owed; the next cycle
    looks it up (the comment by its property, the transition by the status) and records it."""
    inv, slack_emu, jira_emu = world
    thread_ts = _opened(inv, slack_emu)
    jira_emu.control("fault", {"kind": "lost", "match": match, "method": "POST", "times": 1})
    data = inv.investigate(post=True)
    assert any("not done yet" in line for line in data["actions"]), data["actions"]
    assert inv.cli("poll-slack")[0] == 0
    assert inv.cli("poll-slack")[0] == 0
    posts = [r for r in jira_emu.requests if r.method == "POST" and match in r.path]
    assert len(posts) == 1, [r.path for r in posts]  # one write went out, never a second
    assert_clean(_figures(slack_emu, jira_emu, thread_ts))
