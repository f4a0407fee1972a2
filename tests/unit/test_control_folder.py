"""#28 R4: ``control/`` holds the harness's decisions about a case, outside every role's reach;
the case folder keeps mirrors that the harness never reads (workspace/control.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness_cli import paths
from harness_cli.agents import policy
from harness_cli.agents.claude_code import ClaudeCodeRuntime
from harness_cli.delivery import check_guard
from harness_cli.errors import InputError
from harness_cli.services.runtime import RunRequest, RunResult
from harness_cli.workspace import control, registry


class Recorder:
    """A runtime that answers nothing and keeps each request (what the runner asked for)."""

    name = "recorder"

    def __init__(self) -> None:
        self.requests: list[RunRequest] = []

    def run(self, req: RunRequest) -> RunResult:
        self.requests.append(req)
        return RunResult(text="ok", stop="end_turn")


@pytest.fixture
def case(harness_ready: Path) -> Path:
    from harness_cli.config import load_config

    registry.open_case(
        load_config().harness.thresholds, case_id="AAA-1", project="team-a", title="t",
        sync_now=False,
    )  # fmt: skip
    return registry.case_dir("AAA-1")


def _requests(case: Path) -> dict[str, RunRequest]:
    """The request of every role that runs in a case folder, built by the harness's runners."""
    from harness_cli.config import load_config
    from harness_cli.loop.runs import CaseRunner
    from harness_cli.memory.runner import read_only_disallowed

    cfg = load_config()
    seen: dict[str, RunRequest] = {}
    for role in ("investigator", "precommit"):
        rec = Recorder()
        CaseRunner(rec, cfg, case)(role, "p")
        seen[role] = rec.requests[0]
    for role in ("followup", "gap-analyzer", "consolidator"):
        rec = Recorder()
        CaseRunner(rec, cfg, case, disallowed=read_only_disallowed(cfg), guard=False)(role, "p")
        seen[role] = rec.requests[0]
    staged = case.parent.parent / "staged"
    staged.mkdir()
    for role in ("adversarial-reviewer", "red-team"):
        rec = Recorder()
        CaseRunner(rec, cfg, case).isolated(role, "p", staged)
        seen[role] = rec.requests[0]
    return seen


def test_no_role_in_a_case_folder_may_write_or_read_the_control_folder(case: Path) -> None:
    root = Path(os.path.realpath(paths.control_root()))
    assert root in policy.forbidden_roots(policy.default_worktrees())
    for role, req in _requests(case).items():
        writable = Path(os.path.realpath(req.allowed_root))
        assert not root.is_relative_to(writable) and not writable.is_relative_to(root), role
        assert not any(r.is_relative_to(root) for r in policy.readable_roots(req)), role
        # the claude CLI is told so in a deny rule, whatever else it may read
        assert f"Read(/{root}/**)" in ClaudeCodeRuntime().deny_rules(req), role
        offered = set(policy.offered_tools(req))
        if role in ("followup", "gap-analyzer", "consolidator", "adversarial-reviewer",
                    "red-team"):  # fmt: skip
            assert not offered & {"Write", "Edit", "Bash"}, (role, offered)


def test_the_record_lives_in_control_and_the_case_folder_has_its_mirror(case: Path) -> None:
    record = registry.case_file("AAA-1")
    assert record == paths.control_root() / "AAA-1" / "case.json"
    assert (case / "case.json").read_bytes() == record.read_bytes()
    (case / "case.json").write_text(
        (case / "case.json").read_text().replace('"task_auto": false', '"task_auto": true')
    )
    assert registry.load_case("AAA-1").task_auto is False  # the mirror is never read
    [listed] = registry.list_cases()
    assert listed["id"] == "AAA-1"


def test_an_agents_edits_to_the_mirrors_are_put_back_and_forgeries_removed(case: Path) -> None:
    before = (case / "case.json").read_bytes()
    (case / "case.json").write_text("{}")
    forged = case / "acceptance" / "checks-approved.json"
    forged.parent.mkdir()
    forged.write_text('{"approved": [{"digest": "x"}]}')
    assert check_guard.approved_digests(case) == set()

    fixed = control.refresh_mirrors(case)

    assert (case / "case.json").read_bytes() == before
    assert not forged.exists() and str(forged) in fixed
    assert control.refresh_mirrors(case) == []  # nothing left to fix


def test_the_operators_ok_is_read_from_control_only(case: Path) -> None:
    verdict = check_guard.GuardVerdict(changed=["tests/t.py"], digest="d1" * 32)
    assert check_guard.approve(case, verdict, by="operator")
    assert check_guard.approved_digests(case) == {"d1" * 32}
    mirror = case / "acceptance" / "checks-approved.json"
    assert json.loads(mirror.read_text())["approved"][0]["digest"] == "d1" * 32
    mirror.write_text('{"approved": [{"digest": "forged"}]}')
    assert check_guard.approved_digests(case) == {"d1" * 32}


def test_a_mirror_is_never_written_through_a_link(case: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (case / "acceptance").symlink_to(outside)
    verdict = check_guard.GuardVerdict(changed=["tests/t.py"], digest="d2" * 32)

    assert check_guard.approve(case, verdict, by="operator")

    assert list(outside.iterdir()) == []
    assert check_guard.approved_digests(case) == {"d2" * 32}


def test_a_workspace_from_before_control_is_adopted_once(harness_ready: Path) -> None:
    old = paths.cases_root() / "AAA-9"
    old.mkdir(parents=True)
    data: dict[str, Any] = {
        "id": "AAA-9", "project": "team-a", "status": "awaiting_approval",
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
    }  # fmt: skip
    (old / "case.json").write_text(json.dumps(data))
    (old / "acceptance").mkdir()
    (old / "acceptance" / "latest.json").write_text('{"passed": false}')

    assert registry.load_case("AAA-9").status == "awaiting_approval"
    assert (paths.control_root() / "AAA-9" / "acceptance" / "latest.json").exists()
    # from then on, a case.json an agent drops in a new folder makes no case
    late = paths.cases_root() / "AAA-10"
    late.mkdir()
    (late / "case.json").write_text(json.dumps({**data, "id": "AAA-10"}))
    with pytest.raises(InputError):
        registry.load_case("AAA-10")
    assert [c["id"] for c in registry.list_cases()] == ["AAA-9"]


def test_the_control_record_travels_with_the_workspace(
    cli: Any, config_dir: Path, tmp_path: Path
) -> None:
    """Two machines must agree on the operator's decisions: control/ is committed and pushed
    with the case, by every sync of the case folder."""
    import subprocess

    remote = tmp_path / "cases.git"
    subprocess.run(
        ["git", "init", "-q", "--bare", "--initial-branch=main", str(remote)], check=True
    )
    assert cli("init", "--remote", str(remote))[0] == 0
    assert cli("case", "new", "--project", "team-a", "--id", "AAA-3", "--title", "t")[0] == 0
    assert cli("admin", "budget AAA-3 12")[0] == 0

    tree = subprocess.run(
        ["git", "-C", str(remote), "ls-tree", "-r", "--name-only", "main"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert {"control/AAA-3/case.json", "case-workspaces/AAA-3/case.json"} <= set(tree)
    shown = subprocess.run(
        ["git", "-C", str(remote), "show", "main:control/AAA-3/case.json"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert json.loads(shown)["budget_usd"] == 12
