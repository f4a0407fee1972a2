"""dev-agent end to end on the sandbox: real GitLab emulator with real CI, real worktrees, the
scripted model on the anthropic runtime, Slack for the case thread."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH
from harness_cli.services.git import Git
from tests.conftest import REPO, payloads

pytestmark = pytest.mark.slow


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sb") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        shutil.copytree(REPO / "agent-config", tmp_path / "agent-config")
        shutil.copytree(REPO / "sops", tmp_path / "sops")
        yield sandbox


def _approved_case(cli: Any, case_id: str) -> Path:  # type: ignore[no-untyped-def]
    """A case whose investigation is done and approved (the investigation has its own tests)."""
    from harness_cli.config import load_config
    from harness_cli.workspace.registry import case_dir, update_case

    assert cli("case", "new", "--project", "team-a", "--title", "discount", "--id", case_id)[0] == 0
    folder = case_dir(case_id)
    (folder / "ANALYSIS.md").write_text("bulk_discount compares with > instead of >=\n")
    (folder / "TASK.md").write_text("Change the comparison to >=.\n")
    with update_case(case_id, load_config().harness.thresholds, "test") as case:
        for status in ("investigating", "awaiting_approval"):
            case.move(status)
    return folder


def _dev_agent(cli: Any, *args: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("dev-agent", *args, "--json")
    assert code == 0, err
    return json.loads(out)["data"]  # type: ignore[no-any-return]


def test_without_auto_the_plan_waits_for_the_operators_ok(
    cli,
    box: Sandbox,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    assert cli("init")[0] == 0
    _approved_case(cli, "AAA-101")
    _, out, _ = cli("admin", "task AAA-101", "--json")
    assert "dev-agent started" in json.loads(out)["data"]["reply"]
    [first] = payloads(tmp_path, "dev-agent")
    data = _dev_agent(cli, "--payload", _payload_file(tmp_path, first))
    assert data["state"] == "plan_waiting_for_operator"
    assert box.gitlab.snapshot()["merge_requests"] == []
    _, out, _ = cli("admin", "task AAA-101", "--json")
    assert "plan approved" in json.loads(out)["data"]["reply"]
    second = payloads(tmp_path, "dev-agent")[-1]
    assert second["args"]["plan_approved"] is True
    data = _dev_agent(cli, "--payload", _payload_file(tmp_path, second))
    assert data["mr"]["ready"] is True
    [mr] = box.gitlab.snapshot()["merge_requests"]
    record = json.loads(
        (tmp_path / "workspace/case-workspaces/AAA-101/acceptance/latest.json").read_text()
    )
    assert record["passed"] and record["head_sha"] == mr["sha"]


def test_two_cases_on_one_repo_run_side_by_side(
    cli,
    box: Sandbox,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    assert cli("init")[0] == 0
    for case_id in ("AAA-101", "AAA-102"):
        _approved_case(cli, case_id)
        assert cli("admin", f"task {case_id} --auto")[0] == 0
    results: dict[str, int] = {}

    def run(case_id: str) -> None:
        from harness_cli.cli import run as harness

        results[case_id] = harness(["dev-agent", case_id, "--mode", "task", "--auto"])

    threads = [threading.Thread(target=run, args=(c,)) for c in ("AAA-101", "AAA-102")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert results == {"AAA-101": 0, "AAA-102": 0}
    mrs = box.gitlab.snapshot()["merge_requests"]
    assert sorted(m["source_branch"] for m in mrs) == ["harness/AAA-101", "harness/AAA-102"]
    worktrees = sorted((tmp_path / "worktrees").glob("case-*"))
    assert len(worktrees) == 2
    # the mirror (the "main checkout") has no working tree to dirty and main is untouched
    bare = box.gitlab.snapshot()["projects"][0]["bare_repo"]
    main_before = Git(Path(bare)).head_sha("refs/heads/main")
    mirror = next((tmp_path / "worktrees" / ".mirrors").iterdir())
    assert Git(mirror).run("rev-parse", "--is-bare-repository") == "true"
    assert Git(Path(bare)).head_sha("refs/heads/main") == main_before


def test_a_fix_that_changes_nothing_pushes_nothing(
    cli,
    box: Sandbox,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    assert cli("init")[0] == 0
    _approved_case(cli, "AAA-101")
    assert cli("admin", "task AAA-101 --auto")[0] == 0
    assert _dev_agent(cli, "AAA-101", "--mode", "task", "--auto")["mr"]["iid"] == 1
    trace = tmp_path / "trace.log"
    trace.write_text("FAILED tests/test_invoice.py::test_invoice_for_ten_units\n")
    args = ["AAA-101", "--mode", "fix_ci"]
    payload = {"mr": f"{SAMPLE_PROJECT_PATH}!1", "trace_file": str(trace)}
    first = _run_with_args(cli, tmp_path, args, payload)
    assert first["changed"] is True and first["pushed"] is True
    box.gitlab.wait_for_pipelines(timeout=120)
    pipelines = len(box.gitlab.snapshot()["pipelines"])
    second = _run_with_args(cli, tmp_path, args, payload)  # the same fix again: nothing to do
    assert second["changed"] is False and second["pushed"] is False
    box.gitlab.wait_for_pipelines(timeout=120)
    assert len(box.gitlab.snapshot()["pipelines"]) == pipelines


def _payload_file(tmp_path: Path, payload: dict[str, Any]) -> str:
    folder = tmp_path / "harness-home" / "payloads"
    for path in sorted(folder.glob("*-dev-agent-*.json")):
        if json.loads(path.read_text()) == payload:
            return str(path)
    raise AssertionError("payload file not found")


def _run_with_args(
    cli: Any,
    tmp_path: Path,
    argv: list[str],  # type: ignore[no-untyped-def]
    args: dict[str, Any],
) -> dict[str, Any]:
    from harness_cli.dispatch.payload import Payload, Trigger, write_payload

    path = write_payload(
        Payload(
            workflow="dev-agent",
            case_id=argv[0],
            case_dir=str(tmp_path),
            args=args,
            trigger=Trigger(kind="ci_failed"),
        )
    )
    return _dev_agent(cli, *argv, "--payload", str(path))
