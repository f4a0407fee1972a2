"""The operator's admin paths (issue #13, point 9): `task --auto` keeps its --auto until the task
runs, an `admin: task` case gets a case thread whose replies are read, and an admin command typed
as a reply under the harness's own answer is obeyed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import payloads
from tests.intake.conftest import case_threads, poll, thread_replies


def _to_awaiting_approval(case_id: str) -> None:
    """Where the investigation leaves a case it finished (its own tests cover getting there)."""
    from harness_cli.config import load_config
    from harness_cli.workspace.registry import update_case

    with update_case(case_id, load_config().harness.thresholds, "investigated") as case:
        case.move("investigating")
        case.move("awaiting_approval")


def test_task_auto_survives_the_investigation_and_reaches_the_dev_agent(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: task AAA-96 --auto")
    poll(cli)
    [investigation] = payloads(tmp_path, "investigate")
    assert investigation["case_id"] == "AAA-96" and investigation["args"]["auto"] is True
    _to_awaiting_approval("AAA-96")
    code, _, err = cli("admin", "task AAA-96", "--json")  # the approval, as followup sends it
    assert code == 0, err
    [task] = payloads(tmp_path, "dev-agent")
    assert task["args"]["mode"] == "task" and task["args"]["auto"] is True


def test_an_admin_task_case_gets_a_case_thread_and_the_approval_there_is_read(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: task AAA-95 --auto")
    poll(cli)
    [thread] = case_threads(slack_emu, "AAA-95")
    _to_awaiting_approval("AAA-95")
    slack_emu.post_as("D0SELF", "U0OPERATOR", "approve", thread_ts=thread["ts"])
    poll(cli)
    [followup] = payloads(tmp_path, "followup")
    assert followup["case_id"] == "AAA-95" and followup["thread_ts"] == thread["ts"]
    # the real followup workflow reads the reply and hands the case to the dev-agent
    payload_file = sorted((tmp_path / "harness-home" / "payloads").glob("*-followup-*.json"))[0]
    code, out, err = cli("followup", "--payload", str(payload_file), "--json")
    assert code == 0, out + err
    [task] = payloads(tmp_path, "dev-agent")
    assert task["args"]["auto"] is True


def test_an_admin_command_replied_under_the_harness_answer_is_obeyed(
    cli,
    slack_emu,
    harness_ready: Path,  # type: ignore[no-untyped-def]
) -> None:
    pause = slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall pause")
    poll(cli)
    assert len(thread_replies(slack_emu, "D0SELF", pause["ts"])) == 1
    slack_emu.post_as("D0SELF", "U0OPERATOR", "admin: oncall resume", thread_ts=pause["ts"])
    poll(cli)
    _, out, _ = cli("status", "--json")
    assert json.loads(out)["data"]["paused"] is False
    answers = [m["text"] for m in thread_replies(slack_emu, "D0SELF", pause["ts"])]
    assert len(answers) == 3 and "resumed" in answers[-1]
    for _ in range(2):
        poll(cli)
    assert len(thread_replies(slack_emu, "D0SELF", pause["ts"])) == 3
