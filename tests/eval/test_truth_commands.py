"""A step whose command was refused or never ran is reported as such (#31 item 8.3), on both
runtimes: the delivery grader reads each scripted Bash call's fate from the wire (the tool
results the Anthropic emulator received), so an eval no longer passes while every scripted
test run was refused (the anthropic runtime refused the claude CLI's ``description``) or ran
in a box that could not see the worktree (the claude CLI under the eval's /dev/shm scratch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.eval.cases import EVALS_DIR
from harness_cli.sandbox.wire_commands import commands
from harness_cli.services.claude_cli import find_claude

pytestmark = pytest.mark.slow
CASE = EVALS_DIR / "delivery" / "review-reply.yaml"
BOTH = [
    pytest.param("claude-code", marks=[
        pytest.mark.claude_cli,
        pytest.mark.skipif(find_claude() is None, reason="claude CLI not found")]),
    "anthropic",
]  # fmt: skip


def _eval(cli: Any, case: Path, runtime: str) -> dict[str, Any]:
    code, out, err = cli("eval", str(case), "--runtime", runtime, "--json", "--timeout", "500")
    assert code == 0, err
    return dict(json.loads(out)["data"])


@pytest.mark.parametrize("runtime", BOTH)
def test_the_delivery_evals_scripted_test_runs_really_run(cli: Any, runtime: str) -> None:
    """Through `harness eval` (the pool, its scratch): the grader now fails a case whose
    commands did not run, and this one passes — its `pytest` calls ran and passed."""
    data = _eval(cli, CASE, runtime)
    overall = data["variants"]["baseline"][-1]
    assert (overall["passed"], overall["started"]) == (1, 1), data["not_passed"]


@pytest.mark.parametrize("runtime", BOTH)
def test_a_refused_test_run_fails_the_case_whatever_the_report_says(
    cli: Any, runtime: str, tmp_path: Path
) -> None:
    """The same case, its test run sent with a parameter no Bash takes: the runtime refuses
    the call, the scripted report still says the tests passed, and the case fails."""
    raw = yaml.safe_load(CASE.read_text())
    raw["id"] = "refused-run"
    raw["rules_first"] = {"dev-agent": [{
        "name": "a test run no runtime accepts",
        "when": {"user_contains": "mode task", "last_tool": "Edit"},
        "reply": {"tool_calls": [{"name": "Bash", "input": {
            "command": "python -m pytest -q tests/test_discount.py", "no_such_parameter": 1}}]},
    }]}  # fmt: skip
    case = tmp_path / "refused-run.yaml"
    case.write_text(yaml.safe_dump(raw, sort_keys=False))
    data = _eval(cli, case, runtime)
    overall = data["variants"]["baseline"][-1]
    assert overall["passed"] == 0, data
    problems = " ".join(data["not_passed"][0]["problems"])
    assert "python -m pytest -q tests/test_discount.py` refused" in problems, problems


def test_the_wire_tells_ran_refused_failed_and_never_ran() -> None:
    def use(i: str, command: str) -> dict[str, Any]:
        return {"type": "tool_use", "id": i, "name": "Bash", "input": {"command": command}}

    def result(i: str, text: str, error: bool) -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": i, "content": text, "is_error": error}

    asked = {
        "role": "assistant",
        "content": [
            use("a", "ls"),
            use("b", "pytest"),
            use("c", "cat ~/.ssh/id_rsa"),
            use("d", "make"),
        ],
    }
    answers = {"role": "user", "content": [
        result("a", "README.md", False), result("b", "Exit code 1\n1 failed", True),
        result("c", "Bash: unknown parameter 'description'", True)]}  # fmt: skip
    fates = {c.command: c.fate for c in commands([{"messages": [asked, answers]}])}
    assert fates == {"ls": "ran", "pytest": "failed", "cat ~/.ssh/id_rsa": "refused",
                     "make": "never ran"}  # fmt: skip
