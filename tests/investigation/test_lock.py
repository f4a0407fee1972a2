"""The pre-commitment lock out of the agent's reach: a slate rewritten from inside the case
folder (its digest recomputed) is put back from the record in $HARNESS_HOME and the workspace
commit that created the file, the run is told, and every reviewer sees the original — in
`harness investigate`, in `harness review`, and on a second machine that has only the
workspace's history. The defence runs after every model call whatever the runtime, so the
harness's own loop drives it here (the bench runs the library's forged-lock case on both)."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness_cli.investigation.precommit import Slate, digest
from harness_cli.sandbox.model_script import RequestView
from tests.investigation.conftest import CASE, Investigation

ORIGINAL = "the threshold comparison excludes exactly 10 units"
FORGED = "FORGED-SLATE the customer misread the invoice"
LOCK = "kickoff_precommitment.json"


def forged_file() -> str:
    slate = Slate(
        hypothesis_slate=[{"id": f"H{i}", "hypothesis": FORGED} for i in range(1, 7)],
        selection_criteria=["a", "b", "c", "d"],
    )
    return json.dumps({"locked_at": "2026-01-01T00:00:00+00:00", "digest": digest(slate),
                       **slate.model_dump()})  # fmt: skip


def _given(inv: Investigation, role: str) -> str:
    first = [b for b in inv.requests(role) if RequestView.from_body(b).turn == 0]
    assert first, f"no {role} request"
    return json.dumps(first)


def _git(workspace: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(workspace), *args], capture_output=True, text=True, check=True
    ).stdout


def test_a_rewritten_lock_is_put_back_and_every_reviewer_sees_the_original(
    inv: Investigation, slack_emu: Any
) -> None:
    case = inv.open_case()
    inv.script("inv_lock_forge", forged=forged_file())

    data = inv.investigate(post=True)

    assert str(data["exit_line"]).startswith("exit=complete")
    locked = json.loads((case / LOCK).read_text())
    assert locked["hypothesis_slate"][0]["hypothesis"] == ORIGINAL  # put back
    # the record outside the case, and the workspace commit that created the file
    record = json.loads((inv.root / "harness-home" / "precommit" / f"{CASE}.json").read_text())
    assert record["digest"] == locked["digest"] and record["commit"]
    workspace = inv.root / "workspace"
    committed = _git(workspace, "show", f"{record['commit']}:case-workspaces/{CASE}/{LOCK}")
    assert json.loads(committed) == locked
    # the next iteration is told, first thing
    inv.assert_guard_notes_at_head(
        inv.prompts()[1], f"[PRECOMMIT] {LOCK} was changed after it was locked", "put back"
    )
    # the reviewers were handed the original slate, never the forgery
    adversarial = _given(inv, "adversarial-reviewer")
    assert ORIGINAL in adversarial and "FORGED-SLATE" not in adversarial

    # `harness review` after another rewrite: restored again, and the reviewer sees the original
    (case / LOCK).write_text(forged_file())
    inv.emu.reset()
    code, out, err = inv.cli("review", CASE, "--json")
    assert code == 0, err
    result = json.loads(out)["data"]
    assert any("was changed after it was locked" in n for n in result["lock"])
    assert json.loads((case / LOCK).read_text()) == locked
    adversarial = _given(inv, "adversarial-reviewer")
    assert ORIGINAL in adversarial and "FORGED-SLATE" not in adversarial
    inv.assert_no_bash()


def test_a_second_machine_checks_the_lock_against_the_workspace_history(
    inv: Investigation, slack_emu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    inv.open_case()
    inv.script("inv_honest")
    inv.investigate(post=True)
    # machine 2: its own HARNESS_HOME (no record of the lock) and a clone of the workspace
    # where the slate was rewritten and the rewrite committed
    clone = inv.root / "workspace-2"
    subprocess.run(["git", "clone", "-q", str(inv.root / "workspace"), str(clone)], check=True)
    monkeypatch.setenv("HARNESS_WORKSPACE", str(clone))
    monkeypatch.setenv("HARNESS_HOME", str(inv.root / "harness-home-2"))
    lock = clone / "case-workspaces" / CASE / LOCK
    original = json.loads(lock.read_text())
    lock.write_text(forged_file())
    _git(clone, "commit", "-q", "-am", "a rewritten slate")
    inv.emu.reset()

    code, out, err = inv.cli("review", CASE, "--json")

    assert code == 0, err
    assert any("was changed after it was locked" in n for n in json.loads(out)["data"]["lock"])
    assert json.loads(lock.read_text()) == original
    adversarial = _given(inv, "adversarial-reviewer")
    assert ORIGINAL in adversarial and "FORGED-SLATE" not in adversarial
    assert (inv.root / "harness-home-2" / "precommit" / f"{CASE}.json").exists()
    shutil.rmtree(clone)


RUN_A = """
import sys, time
from pathlib import Path
from harness_cli import paths
from harness_cli.agents import guard
from harness_cli.services.runtime import RunRequest, RunResult

case, go, forged = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])

def agent() -> RunResult:
    (case.parent / "a-started").touch()
    while not go.exists():
        time.sleep(0.05)
    forged.write_text('{"forged": "by the agent of case A"}')  # what the guard is for
    return RunResult(text="done", stop="end_turn")

req = RunRequest(role="investigator", prompt="", workdir=case, allowed_root=case,
                 protect=(case, paths.precommit_dir()))
print(guard.guarded(req, agent).reverted)
"""


def test_one_case_run_does_not_revert_what_the_harness_wrote_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workflows in one HARNESS_HOME: case A's investigator runs (its guard watching the
    pre-commitment records) while case B's harness locks B's slate. A's revert leaves B's
    record — before, it deleted it — and still removes the record A's agent forged for C."""
    import os
    import sys

    from harness_cli.investigation import precommit

    home = tmp_path / "home"
    monkeypatch.setenv("HARNESS_HOME", str(home))
    (home / "precommit").mkdir(parents=True)
    case_a, case_b = tmp_path / "cases" / "AAA-1", tmp_path / "cases" / "BBB-2"
    case_a.mkdir(parents=True)
    case_b.mkdir(parents=True)
    go, forged = tmp_path / "go", home / "precommit" / "CCC-3.json"
    env = {**os.environ, "HARNESS_HOME": str(home)}
    run_a = subprocess.Popen(
        [sys.executable, "-c", RUN_A, str(case_a), str(go), str(forged)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        while not (case_a.parent / "a-started").exists():
            assert run_a.poll() is None, run_a.communicate()
            time.sleep(0.05)
        slate = json.loads(forged_file())
        slate = {k: v for k, v in slate.items() if k not in ("locked_at", "digest")}
        precommit.commit(case_b, lambda _: "```json\n" + json.dumps(slate) + "\n```", "slate?")
        assert precommit.record_path("BBB-2").exists()
        go.touch()
        out, err = run_a.communicate(timeout=60)
    finally:
        run_a.kill()
    assert run_a.returncode == 0, err
    assert precommit.load_record("BBB-2") is not None, f"A's revert removed it: {out}"
    assert not forged.exists()  # what A's agent wrote is put back all the same
    assert str(forged) in out and "BBB-2" not in out
