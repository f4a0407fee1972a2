"""L1: the CLI writes JSON lines to agent.log / error.log / system.log, redacted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_events_land_as_json_lines_in_the_right_files(
    cli,
    config_dir: Path,  # type: ignore[no-untyped-def]
    tmp_path: Path,
) -> None:
    assert cli("init")[0] == 0
    assert cli("case", "new", "--project", "team-a", "--title", "t", "--id", "L-1")[0] == 0
    logs = tmp_path / "harness-home" / "logs"
    agent = _lines(logs / "agent.log")
    created = [e for e in agent if e["event"] == "case_created"]
    assert created and created[0]["case_id"] == "L-1" and created[0]["level"] == "info"
    assert {"ts", "level", "event"} <= set(created[0])
    system = _lines(logs / "system.log")
    assert any(e["event"] == "workspace_synced" for e in system)
    assert all(str(e["logger"]).startswith("harness.system") for e in system)
    assert not _lines(logs / "error.log")


def test_refusals_reach_error_log_without_the_token(
    cli,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import logging

    from harness_cli.logs import event, setup_cli_logging

    monkeypatch.setenv("SLACK_USER_TOKEN", "xoxp-1111111111-2222222222-abcdefabcdef")
    setup_cli_logging()
    event(
        logging.getLogger("harness.test"),
        "post_failed",
        logging.ERROR,
        detail="token xoxp-1111111111-2222222222-abcdefabcdef rejected",
    )
    errors = (tmp_path / "harness-home" / "logs" / "error.log").read_text()
    assert "post_failed" in errors and "abcdefabcdef" not in errors
