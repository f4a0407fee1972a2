"""`harness status` summarises the last 24 h from agent.log, the case registry and the state
files: cases by state, runs, exits, escalations, what is paused, token spend."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness_cli import paths
from harness_cli.cost.meter import record
from harness_cli.logs import event, setup_cli_logging
from harness_cli.ops.mcp_watch import McpWatchState, ServerHealth, state_file
from harness_cli.state import files
from harness_cli.state.models import MonitoredMr

log = logging.getLogger("harness.test")


def old_line(name: str, **fields: Any) -> str:
    at = (datetime.now(UTC) - timedelta(days=2)).isoformat(timespec="milliseconds")
    return json.dumps({"ts": at, "level": "info", "event": name, **fields}) + "\n"


def test_status_summarises_the_last_24_hours(cli: Any, harness_ready: Path) -> None:
    assert cli("case", "new", "--project", "team-a", "--title", "checkout 500")[0] == 0
    setup_cli_logging()
    event(log, "model_call", role="investigator")
    event(log, "model_call", role="adversarial-reviewer")
    event(log, "dev_agent_run", role="dev-agent")
    # The spend comes from the cost meter (every call recorded once), not from agent.log.
    for role, usd, tokens in (
        ("investigator", 0.25, (1000, 200, 0, 5000)),
        ("adversarial-reviewer", 0.05, (100, 0, 0, 0)),
        ("dev-agent", 0.5, (0, 300, 0, 0)),
    ):
        record(role=role, model="claude-sonnet-4-6", runtime="anthropic", usd=usd,
               input_tokens=tokens[0], output_tokens=tokens[1], cache_write_tokens=tokens[2],
               cache_read_tokens=tokens[3], reported=False, seconds=1.0)  # fmt: skip
    record(role="investigator", model="m", runtime="anthropic", usd=9.0, input_tokens=99999,
           output_tokens=0, cache_write_tokens=0, cache_read_tokens=0, reported=False,
           seconds=1.0, at=datetime.now(UTC) - timedelta(days=2))  # fmt: skip
    event(log, "dispatch", workflow="investigate")
    event(log, "spawn", argv=["investigate"])
    event(log, "model_retry", attempt=1)
    event(log, "investigation_exit", line="exit=complete confidence=88")
    event(log, "investigation_exit", line="exit=escalated_low_confidence confidence=40")
    event(log, "push_escalated", logging.WARNING, case_id="AAA-1")
    event(log, "mr_escalated", logging.WARNING, case_id="AAA-2")
    event(log, "something_broke", logging.ERROR)
    with (paths.logs_dir() / "agent.log").open("a") as handle:
        handle.write(old_line("model_call", role="investigator", input_tokens=99999))
        handle.write('{"ts": "torn li')
        handle.write("\n")
    with files.monitored_mrs().update() as mrs:
        mrs.mrs["acme/x!1"] = MonitoredMr(project="acme/x", iid=1, case_id="A", case_dir="/a")
        mrs.mrs["acme/x!1"].paused = True
        mrs.mrs["acme/x!2"] = MonitoredMr(project="acme/x", iid=2, case_id="B", case_dir="/b")
        mrs.mrs["acme/x!2"].escalated = True
    state_file().write(McpWatchState(servers={"jira": ServerHealth(failures=2)}))
    assert cli("pause", "2h")[0] == 0

    code, out, err = cli("status", "--json")
    assert code == 0, err
    summary = json.loads(out)["data"]["last_24h"]
    assert summary["cases_opened"] == 1 and summary["cases_by_status"] == {"new": 1}
    assert summary["runs"] == {"investigator": 1, "adversarial-reviewer": 1, "dev-agent": 1}
    assert summary["tokens"] == {
        "input_tokens": 1100,
        "output_tokens": 500,
        "cache_creation_tokens": 0,
        "cache_read_tokens": 5000,
    }
    assert round(summary["cost_usd"], 2) == 0.8
    assert (summary["dispatches"], summary["spawns"], summary["retries"]) == (1, 1, 1)
    assert summary["exits"] == {"complete": 1, "escalated_low_confidence": 1}
    assert summary["escalations"] == {"push_escalated": 1, "mr_escalated": 1}
    assert summary["errors"] == 1 and summary["log_lines_unreadable"] == 1
    assert summary["paused"] is True
    assert summary["paused_mrs"] == ["acme/x!1"] and summary["escalated_mrs"] == ["acme/x!2"]
    assert summary["mcp_failing"] == ["jira"]

    code, text, _ = cli("status")
    assert "last 24 h: 1 case(s) opened; 3 model run(s)" in text
    assert "6,600 tokens ($0.80)" in text
    assert "MRs waiting for you: acme/x!2" in text and "MCP failing: jira" in text


def test_an_empty_machine_has_a_quiet_summary(cli: Any, harness_ready: Path) -> None:
    code, out, err = cli("status", "--json")
    assert code == 0, err
    summary = json.loads(out)["data"]["last_24h"]
    assert summary["runs"] == {} and summary["cases_by_status"] == {}
    assert sum(summary["tokens"].values()) == 0
