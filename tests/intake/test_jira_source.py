"""Jira as a source (#30), through the CLI on the Slack and Jira emulators: `admin: task KEY`
reads the issue into the case (real key), answers naming an unknown one, and waits while Jira is
down — told once, retried by every poll-slack cycle; a Slack ticket naming a key of a configured
prefix gets the issue attached. Before, the case of `admin: task AAA-123` held only the words
"admin: task AAA-123"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_cli.investigation.publish import read_ticket
from tests.conftest import payloads
from tests.intake.conftest import poll, thread_replies

ISSUE = {
    "key": "AAA-123",
    "summary": "Bulk discount not applied at exactly 10 units",
    "description": "An order of 10 x 5.00 is charged 50.00 instead of 45.00.",
    "comments": [{"author": "harness-bot", "body": "Also seen on ORD-42"}],
    "links": [{"type": "Problem/Incident", "direction": "outward", "key": "AAA-87"}],
}
OTHER = {"key": "AAA-87", "summary": "Refactor: name the bulk threshold", "status": "Done"}


def _case_dir(tmp_path: Path, case_id: str) -> Path:
    return tmp_path / "workspace" / "case-workspaces" / case_id


def _down(jira_emu: Any) -> None:
    jira_emu.control("fault", {"kind": "drop", "match": "/rest/api", "times": -1})


def test_admin_task_reads_the_issue_into_the_case(
    cli,
    slack_emu,
    jira_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    jira_emu.control("seed", {"issues": [ISSUE, OTHER]})
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: task AAA-123")
    poll(cli)
    [started] = payloads(tmp_path, "investigate")
    assert started["case_id"] == "AAA-123"
    ticket = read_ticket(_case_dir(tmp_path, "AAA-123"))
    for text in ("charged 50.00 instead of 45.00", "Bulk discount not applied", "To Do",
                 "Also seen on ORD-42", "causes AAA-87: Refactor"):  # fmt: skip
        assert text in ticket, ticket
    # the control copy is what is read: an agent editing the mirror changes nothing
    (_case_dir(tmp_path, "AAA-123") / "jira-issue.md").write_text("ignore all that")
    assert "charged 50.00" in read_ticket(_case_dir(tmp_path, "AAA-123"))


def test_admin_task_with_an_unknown_key_answers_naming_it_and_opens_nothing(
    cli,
    slack_emu,
    jira_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    command = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: task AAA-999")
    poll(cli)
    [answer] = thread_replies(slack_emu, "D0SELF", command["ts"])
    assert "AAA-999 is not an issue in Jira" in answer["text"]
    assert not payloads(tmp_path, "investigate")
    assert not _case_dir(tmp_path, "AAA-999").exists()
    code, out, _ = cli("admin", "task AAA-998")  # the same from a shell
    assert code == 0 and "AAA-998 is not an issue in Jira" in out


def test_admin_task_while_jira_is_down_waits_is_told_once_and_the_next_cycle_retries(
    cli,
    slack_emu,
    jira_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    jira_emu.control("seed", {"issues": [ISSUE, OTHER]})
    _down(jira_emu)
    command = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: task AAA-123")
    poll(cli)
    [answer] = thread_replies(slack_emu, "D0SELF", command["ts"])
    assert "Jira did not answer" in answer["text"] and "waits" in answer["text"]
    assert not payloads(tmp_path, "investigate")
    dm_before = len(slack_emu.messages("D0SELF"))
    for _ in range(2):  # still down: retried, and nobody is told again
        poll(cli)
    assert len(slack_emu.messages("D0SELF")) == dm_before
    assert not payloads(tmp_path, "investigate")
    jira_emu.control("clear_faults", {})
    poll(cli)
    [started] = payloads(tmp_path, "investigate")
    assert started["args"] == {"then": "task", "auto": False}
    assert "charged 50.00" in read_ticket(_case_dir(tmp_path, "AAA-123"))
    told = [m["text"] for m in slack_emu.messages("D0SELF")[dm_before:]]
    assert len(told) == 1 and "Jira answered: AAA-123" in told[0], told
    poll(cli)  # and nothing more
    assert len(payloads(tmp_path, "investigate")) == 1


def test_a_slack_ticket_naming_a_key_gets_the_issue_and_an_unknown_one_goes_alone(
    cli,
    slack_emu,
    jira_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    jira_emu.control("seed", {"issues": [ISSUE, OTHER]})
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "Orders of 10 are charged full price, see AAA-123")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "Same as AAA-555 maybe?")
    poll(cli)
    started = sorted(p["case_id"] for p in payloads(tmp_path, "investigate"))
    assert started == ["AAA-123", "AAA-555"]
    ticket = read_ticket(_case_dir(tmp_path, "AAA-123"))
    assert "charged full price" in ticket and "charged 50.00 instead of 45.00" in ticket
    assert "Jira issue" not in read_ticket(_case_dir(tmp_path, "AAA-555"))
    openings = [m["text"] for m in slack_emu.messages("D0SELF") if not m.get("thread_ts")]
    assert any("AAA-555 is not an issue in Jira" in t for t in openings), openings
    assert any("Jira AAA-123: Bulk discount" in t for t in openings), openings


def test_a_slack_ticket_while_jira_is_down_waits_for_the_issue(
    cli,
    slack_emu,
    jira_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    jira_emu.control("seed", {"issues": [ISSUE, OTHER]})
    _down(jira_emu)
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "Orders of 10 are charged full price, AAA-123")
    poll(cli)
    assert not payloads(tmp_path, "investigate")
    poll(cli)
    jira_emu.control("clear_faults", {})
    poll(cli)
    [started] = payloads(tmp_path, "investigate")
    assert started["trigger"]["kind"] == "new_ticket" and started["channel"] == "C0SUPPORT"
    assert "charged 50.00" in read_ticket(_case_dir(tmp_path, "AAA-123"))
