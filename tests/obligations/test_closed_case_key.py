"""#20 point 5: a stranger's ticket naming a closed case's Jira key does not join the closed
case. It opens a new case linked to the old one (the operator sees both in the self-DM) and its
replies dispatch followups on the new case only. A case the operator reopened is joined."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import payloads
from tests.intake.conftest import case_threads, poll


def _close(cli: Any, case_id: str) -> None:
    code, _, err = cli("case", "close", case_id)
    assert code == 0, err


def _case(tmp_path: Path, case_id: str) -> dict[str, Any]:
    path = tmp_path / "workspace" / "case-workspaces" / case_id / "case.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_a_new_ticket_naming_a_closed_cases_key_opens_a_new_linked_case(
    cli: Any, slack_emu: Any, harness_ready: Path, tmp_path: Path
) -> None:
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-77 refunds are stuck")
    poll(cli)
    _close(cli, "AAA-77")
    stranger = slack_emu.post_as("C0SUPPORT", "U0STRANGER", "AAA-77 is back, refunds stuck again")
    poll(cli)

    new_id = f"slack-C0SUPPORT-{stranger['ts'].replace('.', '-')}"
    old, new = _case(tmp_path, "AAA-77"), _case(tmp_path, new_id)
    assert old["status"] == "closed"  # not reopened from outside
    assert new["status"] == "new" and new["linked_to"] == "AAA-77" and new["jira"] == "AAA-77"
    assert old["linked_cases"] == [new_id]
    [thread] = case_threads(slack_emu, new_id)  # the operator sees the new case…
    assert "AAA-77" in thread["text"] and "closed" in thread["text"]  # …and what it links to
    assert [p["case_id"] for p in payloads(tmp_path, "investigate")] == ["AAA-77", new_id]

    # The stranger's reply belongs to the new case; nothing is dispatched on the closed one.
    slack_emu.post_as("C0SUPPORT", "U0STRANGER", "any news?", thread_ts=stranger["ts"])
    poll(cli)
    assert [p["case_id"] for p in payloads(tmp_path, "followup")] == [new_id]
    assert _case(tmp_path, "AAA-77")["status"] == "closed"


def test_a_case_the_operator_reopened_is_joined_by_a_ticket_naming_it(
    cli: Any, slack_emu: Any, harness_ready: Path, tmp_path: Path
) -> None:
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-78 invoices are wrong")
    poll(cli)
    _close(cli, "AAA-78")
    (tmp_path / "workspace" / "case-workspaces" / "AAA-78" / "ANALYSIS.md").write_text("done\n")
    code, _, err = cli("case", "reopen", "AAA-78")
    assert code == 0, err
    second = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER2", "AAA-78 still wrong for us too")
    poll(cli)
    assert not (
        tmp_path / "workspace" / "case-workspaces" / f"slack-C0SUPPORT-{second['ts']}"
    ).exists()
    assert len(case_threads(slack_emu, "AAA-78")) == 1
    assert [p["case_id"] for p in payloads(tmp_path, "investigate")] == ["AAA-78"]
