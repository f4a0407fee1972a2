"""A second machine (a fresh HARNESS_HOME and a clone of the workspace remote) joins, or a
reinstall starts over: the self-DM's past admin commands are history, not intent; tickets the
workspace already holds as cases are recognised; the operator is told once what was skipped
(issue #13, point 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli.services.git import Git
from tests.intake.conftest import case_threads, poll, thread_replies


def _payloads(home: Path, workflow: str) -> list[dict[str, Any]]:
    folder = home / "payloads"
    found = (
        [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
        if folder.exists()
        else []
    )
    return [p for p in found if p["workflow"] == workflow]


def _machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> Path:
    home = tmp_path / f"home-{name}"
    monkeypatch.setenv("HARNESS_HOME", str(home))
    monkeypatch.setenv("HARNESS_WORKSPACE", str(tmp_path / f"workspace-{name}"))
    return home


def test_a_second_home_executes_no_old_admin_command_and_reopens_no_case(
    cli,
    slack_emu,
    config_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    bare = tmp_path / "workspace-remote.git"
    bare.mkdir()
    Git(bare).run("init", "-q", "--bare", "--initial-branch=main")
    remote = f"file://{bare}"
    # -- machine A: the harness as it ran for the last hour ----------------------------------
    home_a = _machine(monkeypatch, tmp_path, "a")
    assert cli("init", "--remote", remote)[0] == 0
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-41 the nightly export failed")
    other = slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "orders page is blank")
    poll(cli)
    other_id = f"slack-C0SUPPORT-{other['ts'].replace('.', '-')}"
    commands = [
        slack_emu.post_as("D0SELF", "U0OPERATOR", text)
        for text in (
            "admin: oncall pause",
            "admin: oncall resume",
            f"admin: close-case {other_id}",
            "admin: task AAA-52",
            "admin: oncall status",
        )
    ]
    poll(cli)
    answers = {c["ts"]: len(thread_replies(slack_emu, "D0SELF", c["ts"])) for c in commands}
    assert all(n == 1 for n in answers.values()), answers
    [thread] = case_threads(slack_emu, "AAA-41")
    dms_before = len([m for m in slack_emu.messages("D0SELF") if not m.get("thread_ts")])
    # -- machine B joins: a fresh home, a clone of the same workspace -------------------------
    home_b = _machine(monkeypatch, tmp_path, "b")
    assert cli("init", "--remote", remote)[0] == 0
    assert (tmp_path / "workspace-b" / "case-workspaces" / "AAA-41" / "case.json").exists()
    data = poll(cli)
    assert data["new_cases"] == [] and data["dispatched"] == [] and data["admin"] == []
    after = {c["ts"]: len(thread_replies(slack_emu, "D0SELF", c["ts"])) for c in commands}
    assert after == answers, "an old admin command ran again"
    assert len(case_threads(slack_emu, "AAA-41")) == 1
    assert len(case_threads(slack_emu, other_id)) == 1
    assert _payloads(home_b, "investigate") == [] and _payloads(home_b, "dev-agent") == []
    _, out, _ = cli("status", "--json")
    assert json.loads(out)["data"]["paused"] is False
    # told once, in one DM, what was skipped
    top = [m for m in slack_emu.messages("D0SELF") if not m.get("thread_ts")]
    assert len(top) == dms_before + 1
    assert "5 admin command" in top[-1]["text"] and "admin: oncall pause" in top[-1]["text"]
    for _ in range(2):
        poll(cli)
    assert len([m for m in slack_emu.messages("D0SELF") if not m.get("thread_ts")]) == len(top)
    # what happens after B's install is B's to handle: a reply in a known case thread, a ticket
    slack_emu.post_as("D0SELF", "U0OPERATOR", "what did the logs say?", thread_ts=thread["ts"])
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-43 a new one")
    data = poll(cli)
    assert data["new_cases"] == ["AAA-43"]
    assert [p["case_id"] for p in _payloads(home_b, "followup")] == ["AAA-41"]
    assert [p["case_id"] for p in _payloads(home_b, "investigate")] == ["AAA-43"]
    assert _payloads(home_a, "investigate")  # machine A did its own work once
