"""The write guard (issue #19 point 4): the files a dev-agent run actually changed (from git,
not from the task text) are attached to its session; a change inside another session's
exclusive reservation goes back to the agent once with the rule and the holder, then the run
ends refused (exit 4) and nothing is pushed. Sandbox: GitLab emulator, scripted model, real
worktrees and the real reservation refs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_cli.sandbox.runner import Sandbox
from tests.conftest import REPO, payloads

pytestmark = pytest.mark.slow
LINE = (
    'blocked by the write guard: session denied by preflight gate: "acme/pricing-service: '
    'pricing/" is being worked on by claude-code/alice (rewrite pricing) — pricing/discount.py'
)


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sb") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        monkeypatch.setenv("HARNESS_USER", "alice")
        shutil.copytree(REPO / "agent-config", tmp_path / "agent-config")
        shutil.copytree(REPO / "sops", tmp_path / "sops")
        yield sandbox


def _approved_case(cli, case_id: str) -> None:  # type: ignore[no-untyped-def]
    from harness_cli.config import load_config
    from harness_cli.workspace.registry import case_dir, update_case

    assert cli("case", "new", "--project", "team-a", "--title", "discount", "--id", case_id)[0] == 0
    (case_dir(case_id) / "ANALYSIS.md").write_text("bulk_discount compares with > not >=\n")
    (case_dir(case_id) / "TASK.md").write_text("Change the comparison to >=.\n")
    with update_case(case_id, load_config().harness.thresholds, "test") as case:
        for status in ("investigating", "awaiting_approval"):
            case.move(status)


def test_a_change_in_another_sessions_reservation_is_refused_before_push(
    cli, box: Sandbox, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    assert cli("init")[0] == 0
    _approved_case(cli, "AAA-101")
    held = ["--repo", "acme/pricing-service", "--path", "pricing/", "--task", "rewrite pricing"]
    assert cli("session", "open", *held)[0] == 0
    assert cli("admin", "task AAA-101 --auto")[0] == 0
    [payload] = payloads(tmp_path, "dev-agent")
    # the task text guessed README.md; the agent will edit pricing/discount.py
    payload["args"]["paths"] = ["README.md"]
    path = tmp_path / "dev-agent-payload.json"
    path.write_text(json.dumps(payload))
    code, out, err = cli("dev-agent", "--payload", str(path))
    assert code == 4, out + err
    assert LINE in err
    told = [json.dumps(r.json_body()) for r in box.anthropic.recorded("/v1/messages")]
    assert any("blocked by the write guard" in t and "claude-code/alice" in t for t in told)
    snap = box.gitlab.snapshot()
    assert snap["merge_requests"] == []
    bare = Path(snap["projects"][0]["bare_repo"])
    assert not (bare / "refs" / "heads" / "harness" / "AAA-101").exists()
    sessions = tmp_path / "harness-home" / "sessions"
    records = [json.loads(p.read_text()) for p in sessions.glob("*.json")]
    [run] = [r for r in records if r.get("workflow") == "dev-agent"]
    assert "pricing/discount.py" in run["files_changed"] and run["state"] == "closed"
    outcome = json.loads(Path(run["outcome"]).read_text())
    assert outcome["succeeded"] is False and outcome["decisions"] == []
    assert outcome["held_by_others"] == ["acme/pricing-service: pricing/"]
