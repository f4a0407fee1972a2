"""The outcome report (issue #19 point 5): written by the harness at the end of each session
from the agent's one report_outcome answer plus the facts it saw (files changed from git,
checks run with their exit codes); committed on the workspace with the elements touched; shown
to the next session on those elements. Decisions only when the run succeeded."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_cli.sandbox.runner import Sandbox
from harness_cli.services.git import Git
from harness_cli.sessions.outcome import build, parse_report
from tests.conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture
def box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sb") as sandbox:
        for key, value in sandbox.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
        monkeypatch.setenv("HARNESS_USER", "bob")
        shutil.copytree(REPO / "agent-config", tmp_path / "agent-config")
        shutil.copytree(REPO / "sops", tmp_path / "sops")
        yield sandbox


def test_a_successful_run_leaves_its_outcome_on_the_elements_and_the_next_session_reads_it(
    cli, box: Sandbox, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from tests.sessions.test_write_guard import _approved_case

    assert cli("init")[0] == 0
    _approved_case(cli, "AAA-101")
    assert cli("admin", "task AAA-101 --auto")[0] == 0
    code, out, err = cli("dev-agent", "AAA-101", "--mode", "task", "--auto", "--json")
    assert code == 0, err
    workspace = tmp_path / "workspace"
    found = sorted((workspace / "sessions" / "outcomes").rglob("*.json"))
    assert len(found) == 2  # the case and the repository
    report = json.loads(found[0].read_text())
    assert report == json.loads(found[1].read_text())
    assert report["succeeded"] is True and report["reported"] is True
    assert report["name"].startswith("harness/dev-agent/")
    assert report["summary"] == "bulk_discount now applies from BULK_THRESHOLD units on"
    assert report["decisions"] == ["the threshold quantity itself gets the bulk discount (>=)"]
    assert report["files_changed"] == ["pricing/discount.py"]
    assert report["checks"] and all(c["exit_code"] == 0 for c in report["checks"])
    # committed on the workspace
    tracked = Git(workspace).run("ls-files", "sessions/outcomes")
    assert all(str(p.relative_to(workspace)) in tracked for p in found)
    # the next session on the repository is shown it
    code, out, _ = cli("session", "open", "--repo", "acme/pricing-service", "--json")
    shown = json.loads(out)
    assert code == 0
    text = json.dumps(shown)
    assert "last work here: harness/dev-agent/" in text and "(succeeded" in text
    assert "the threshold quantity itself gets the bulk discount" in text


def test_a_failed_run_keeps_summary_and_follow_ups_but_records_no_decision() -> None:
    text = (
        "done.\n```json\n"
        '{"report_outcome": {"summary": "half done", "decisions": ["use >="], '
        '"follow_ups": ["finish tax"], "relied_on": []}}\n```'
    )
    answer = parse_report(text)
    base = {"session": "s", "name": "harness/dev-agent/m", "workflow": "dev-agent"}
    failed = build(dict(base), answer, succeeded=False)
    assert failed.summary == "half done" and failed.follow_ups == ["finish tax"]
    assert failed.decisions == [] and failed.reported
    ok = build(dict(base), answer, succeeded=True)
    assert ok.decisions == ["use >="]
    assert parse_report('{"report_outcome": "not an object"} {broken') is None
