"""Budgets that stop work cleanly: a budget crossed mid-investigation ends it before the next
model call with exit=budget (exit code 4), every iteration so far kept and one DM with what
was spent; the case budget is raised with `admin: budget <case> <amount>` and the next run
goes on; any other workflow over a budget exits 4 with one DM."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.eval.cases import LibraryCase, load_library
from harness_cli.eval.grader import check
from harness_cli.eval.investigation_driver import CASE_ID, run_case
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.runner import SANDBOX_TOKENS
from harness_cli.sandbox.slack_api import SlackEmulator
from harness_cli.services.claude_cli import find_claude

LIBRARY = {c.id: c for c in load_library()}
CLI = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(find_claude() is None, reason="claude CLI not found: run `make claude-cli`"),
]


@pytest.fixture(scope="module")
def model() -> Iterator[AnthropicEmulator]:
    emu = AnthropicEmulator()
    emu.start()
    yield emu
    emu.stop()


def _cost_lines(root: Path) -> list[dict[str, Any]]:
    lines = []
    for path in (root / "harness-home" / "logs" / "cost").glob("*.jsonl"):
        lines += [json.loads(raw) for raw in path.read_text().splitlines()]
    return lines


@pytest.mark.parametrize("runtime", [pytest.param("claude-code", marks=CLI), "anthropic"])
def test_a_budget_crossed_mid_investigation_ends_it_with_nothing_lost(
    runtime: str, model: AnthropicEmulator, tmp_path: Path
) -> None:
    """On both runtimes: the claude CLI's calls are larger (its tool definitions), and the
    case's budget sits where both have spent more than precommit and iteration 1 is done."""
    case = LIBRARY["budget-mid-investigation"]
    seen = run_case(case, runtime, anthropic=model, keep=tmp_path)
    assert check(case, seen) == []
    root = next(tmp_path.glob("harness-lib-*"))
    folder = root / "workspace" / "case-workspaces" / CASE_ID
    # iteration 1 is on disk, whole; iteration 2 never started: no call was made for it
    first = json.loads((folder / "iterations" / "01.json").read_text())
    assert first["output"] and first["verdict"]["confidence"] == 60
    assert not (folder / "iterations" / "02.json").exists()
    investigate = [x for x in _cost_lines(root) if x["workflow"] == "investigate"]
    assert [x["role"] for x in investigate] == ["precommit", "investigator"]
    served = [c for c in model.calls if c.role in ("precommit", "investigator")]
    assert len(served) == sum(x["turns"] for x in investigate)  # nothing in flight was cut
    record = json.loads((folder / "case.json").read_text())
    assert record["status"] == "escalated" and record["exit"].startswith("exit=budget")
    budget = case.setup.config["cost"]["budgets"]["workflow_tokens"]
    assert record["cost"]["by_workflow"]["investigate"]["tokens"] >= budget
    assert len(seen.dm) == 1  # one DM, with the exit line, the spend and what to do


def _env(root: Path, model: AnthropicEmulator, slack: SlackEmulator, mp: Any) -> None:
    for key, value in {
        "HARNESS_HOME": root / "harness-home", "HARNESS_WORKSPACE": root / "workspace",
        "HARNESS_CONFIG": root / "agent-config", "HARNESS_WORKTREES": root / "worktrees",
        "HOME": root / "home",
    }.items():  # fmt: skip
        mp.setenv(key, str(value))
    mp.setenv("HARNESS_RUNTIME", "anthropic")
    mp.setenv("ANTHROPIC_BASE_URL", model.url)
    mp.setenv("ANTHROPIC_API_KEY", SANDBOX_TOKENS["ANTHROPIC_API_KEY"])
    mp.setenv("SLACK_API_URL", slack.url + "/api/")
    mp.setenv("SLACK_USER_TOKEN", SANDBOX_TOKENS["SLACK_USER_TOKEN"])


def test_the_operator_raises_a_case_budget_and_the_next_run_goes_on(
    model: AnthropicEmulator, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = LIBRARY["honest-complete"].model_dump()
    base["setup"]["config"] = {"cost": {"budgets": {"case_usd": 0.01}}}
    case = LibraryCase.model_validate({**base, "expect": {"exit": "budget", "exit_code": 4}})
    seen = run_case(case, "anthropic", anthropic=model, keep=tmp_path)
    assert (seen.exit, seen.exit_code) == ("budget", 4), seen.exit_line
    assert "case budget $0.01 reached" in seen.exit_line
    assert f"admin: budget {CASE_ID} <amount>" in seen.dm[0]
    root = next(tmp_path.glob("harness-lib-*"))
    slack = SlackEmulator()
    slack.start()
    try:
        _env(root, model, slack, monkeypatch)
        model.load_script(case.model_source())
        # any other workflow over the case budget: exit 4 and one DM saying so
        code, _, err = cli("review", CASE_ID)
        assert code == 4 and "budget of $0.01 is reached" in err
        (dm,) = slack.messages("D0SELF")
        assert "review on LIB-1 stopped" in dm["text"] and "Cost:" in dm["text"]
        code, out, err = cli("admin", f"budget {CASE_ID} 5")
        assert code == 0, err
        assert "budget $5 (was $0.01" in out
        record = json.loads(
            (root / "workspace" / "case-workspaces" / CASE_ID / "case.json").read_text()
        )
        assert record["budget_usd"] == 5.0
        code, out, err = cli("investigate", CASE_ID, "--json")
        assert code == 0, err
        assert json.loads(out)["data"]["exit"] == "complete"
        code, _, err = cli("admin", f"budget {CASE_ID} lots")
        assert "not an amount" in _ + err
        # the day's budget sums every run of the machine, whatever a case's own limit says
        today = sum(x["usd"] for x in _cost_lines(root))
        settings_file = root / "agent-config" / "harness.yaml"
        settings = yaml.safe_load(settings_file.read_text())
        settings["cost"]["budgets"]["day_usd"] = round(today * 0.9, 6)
        settings_file.write_text(yaml.safe_dump(settings, sort_keys=False))
        calls = len(model.calls)
        code, _, err = cli("review", CASE_ID)
        assert code == 4 and "today's budget" in err and "day_usd" in err, err
        assert len(model.calls) == calls  # stopped before its first call
        assert "today's budget" in slack.messages("D0SELF")[-1]["text"]
    finally:
        slack.stop()
