"""The smaller defects of issue #13 (point 10), each as an operator meets it."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import REPO, payloads
from tests.intake.conftest import case_threads, poll


def test_two_dispatches_under_a_pinned_now_get_two_payload_files(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("HARNESS_NOW", datetime.now(UTC).isoformat())
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-101 quotes are stale")
    poll(cli)
    [thread] = case_threads(slack_emu, "AAA-101")
    slack_emu.post_as("D0SELF", "U0OPERATOR", "check the cache", thread_ts=thread["ts"])
    poll(cli)
    slack_emu.post_as("D0SELF", "U0OPERATOR", "and the TTL", thread_ts=thread["ts"])
    poll(cli)
    triggers = [p["trigger"]["ts"] for p in payloads(tmp_path, "followup")]
    assert len(triggers) == 2 and len(set(triggers)) == 2


def test_case_migrate_rewrites_paths_when_the_workspace_is_reached_through_a_symlink(
    cli,
    slack_emu,
    config_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    real = tmp_path / "disk"
    real.mkdir()
    os.symlink(real, tmp_path / "data")  # e.g. /data -> /mnt/disk1
    monkeypatch.setenv("HARNESS_WORKSPACE", str(tmp_path / "data" / "workspace"))
    assert cli("init")[0] == 0
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-102 stock counts drift")
    poll(cli)
    code, out, err = cli("case", "migrate", "--to", str(tmp_path / "data" / "ws2"), "--json")
    assert code == 0, err
    assert json.loads(out)["data"]["rewritten"]["oncall_thread_map.json"] == 2
    tmap = json.loads((tmp_path / "harness-home" / "oncall_thread_map.json").read_text())
    for entry in tmap["threads"].values():
        assert Path(entry["case_dir"]).is_dir(), entry["case_dir"]
        assert "ws2" in entry["case_dir"]


def test_an_error_that_ends_a_subcommand_reaches_error_log(
    cli,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    error_log = tmp_path / "harness-home" / "logs" / "error.log"
    code, _, err = cli("case", "show", "NOPE-1")  # bad input: exit 2, one line on stderr
    assert code == 2 and err.count("\n") == 1 and "no case 'NOPE-1'" in err
    [entry] = [json.loads(line) for line in error_log.read_text().splitlines()]
    assert entry["event"] == "command_failed" and entry["command"] == "case"
    assert entry["exit_code"] == 2 and "no case 'NOPE-1'" in entry["message"]
    monkeypatch.setenv("SLACK_USER_TOKEN", "xoxp-0000000000-test")
    monkeypatch.setenv("SLACK_API_URL", "http://127.0.0.1:9/api/")  # nothing listens there
    code, _, err = cli("poll-slack")
    assert code == 1 and err.splitlines()[-1].startswith("harness: ") and "cannot reach" in err
    ended = [json.loads(line) for line in error_log.read_text().splitlines()]
    [entry] = [e for e in ended if e["event"] == "command_failed" and e["command"] == "poll-slack"]
    assert entry["exit_code"] == 1 and "cannot reach" in entry["message"]


def test_oncall_toggle_leaves_a_projects_own_auto_monitor_alone(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    projects = harness_ready / "projects.yaml"
    projects.write_text(
        projects.read_text().replace(
            '    repos: ["acme/pricing-service"]',
            '    repos: ["acme/pricing-service"]\n    auto_monitor: false',
        )
    )
    _, out, _ = cli("admin", "oncall-toggle", "--json")  # default on → off
    _, out, _ = cli("admin", "oncall-toggle", "--json")  # → on again
    reply = json.loads(out)["data"]["reply"]
    assert "team-a" in reply and "projects.yaml" in reply
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-103 team-a watches its own tickets")
    data = poll(cli)
    assert data["new_cases"] == ["AAA-103"] and payloads(tmp_path, "investigate") == []
    _, out, _ = cli("status", "--json")
    assert json.loads(out)["data"]["auto_monitor"] == {"team-a": False, "team-b": True}
    # the operator can still flip that one project, by name
    _, out, _ = cli("admin", "oncall-toggle team-a", "--json")
    assert "team-a is now on" in json.loads(out)["data"]["reply"]
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-104 now it is watched")
    assert poll(cli)["dispatched"] == ["investigate AAA-104"]


def test_the_crontab_keeps_poll_slack_as_the_safety_net_of_listen() -> None:
    text = (REPO / "cron" / "crontab").read_text()
    [line_no] = [
        i for i, line in enumerate(text.splitlines()) if line.rstrip().endswith("poll-slack")
    ]
    comment = text.splitlines()[line_no - 1].lower()
    assert "skip" not in comment and "safety net" in comment
