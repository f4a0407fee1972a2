"""A human's Claude Code session takes part through the claude CLI hooks (issue #19 point 6):
the real hook scripts, fed the hook events the CLI pipes on stdin. SessionStart opens
claude-code/<user> on the checkout's repo (or reports the conflict in the model's context);
PreToolUse on Write/Edit exits 2 with the holder named when the file is reserved by another
session; SessionEnd closes it. A human's session denies a harness run, and vice versa."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness_cli.memory.hooks_install import HOOKS_DIR
from tests.conftest import REPO

HARNESS = REPO / ".venv" / "bin" / "harness"


def _hook(script: str, event: dict[str, object]) -> tuple[int, str, str]:
    proc = subprocess.run(
        ["sh", str(HOOKS_DIR / script)],
        input=json.dumps(event),
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
        env={**os.environ, "HARNESS_BIN": str(HARNESS)},
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "billing"
    repo.mkdir()
    for args in (
        ["init", "-q"],
        ["remote", "add", "origin", "git@gitlab.example:acme/billing.git"],
        ["commit", "-q", "--allow-empty", "-m", "start"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return repo


def test_a_human_session_through_the_hooks_denies_a_harness_run_and_vice_versa(
    cli, harness_ready: Path, checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HARNESS_USER", "alice")
    # a harness run holds src/invoice/ exclusively
    code, out, _ = cli(
        "session",
        "open",
        "--workflow",
        "dev-agent",
        "--repo",
        "acme/billing",
        "--path",
        "src/invoice/",
        "--task",
        "fix rounding",
        "--json",
    )
    run = json.loads(out)["data"]
    start = {
        "session_id": "c0ffee-1",
        "cwd": str(checkout),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    code, out, err = _hook("session-open.sh", start)
    assert code == 0, err
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert (
        "**Conflicts**" in context and f"{run['name']} holds acme/billing: src/invoice/" in context
    )
    tool = {
        "session_id": "c0ffee-1",
        "cwd": str(checkout),
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": str(checkout / "src/invoice/round.py")},
    }
    code, _, err = _hook("pre-tool-use.sh", tool)
    assert code == 2
    assert (
        f'session denied by preflight gate: "acme/billing: src/invoice/" is being worked on '
        f"by {run['name']} (fix rounding)"
    ) in err
    tool["tool_input"] = {"file_path": str(checkout / "docs/notes.md")}
    assert _hook("pre-tool-use.sh", tool)[0] == 0
    # the harness run ends; the human's next session holds the whole repository
    assert cli("session", "close", run["id"])[0] == 0
    start["session_id"] = "c0ffee-2"
    code, out, err = _hook("session-open.sh", start)
    assert code == 0 and "Conflicts" not in out, err + out
    _, out, _ = cli("session", "list", "--json")
    [human] = json.loads(out)["data"]["live"]
    assert (
        human["name"] == "claude-code/alice"
        and human["elements"][0]["scope"] == "repo:acme/billing"
    )
    payload = tmp_path / "payload.json"
    payload.write_text(
        json.dumps(
            {
                "workflow": "dev-agent",
                "case_id": "AAA-3",
                "case_dir": "",
                "repo": "acme/billing",
                "trigger": {"kind": "admin_command"},
                "args": {"mode": "task"},
            }
        )
    )
    code, _, err = cli("dev-agent", "--payload", str(payload))
    assert code == 4
    assert (
        '"acme/billing" is being worked on by claude-code/alice (claude session in billing)' in err
    )
    (checkout / "NOTES.md").write_text("proration\n")
    end = {"session_id": "c0ffee-2", "cwd": str(checkout), "hook_event_name": "SessionEnd"}
    assert _hook("session-end.sh", end)[0] == 0
    _, out, _ = cli("session", "list", "--json")
    assert json.loads(out)["data"]["live"] == []
    code, out, _ = cli("session", "open", "--repo", "acme/billing", "--json")
    assert "last work here: claude-code/alice" in out
    outcomes = sorted((tmp_path / "workspace" / "sessions" / "outcomes").rglob("*.json"))
    assert json.loads(outcomes[-1].read_text())["files_changed"] == ["NOTES.md"]
