"""`harness eval --baseline FILE`, the eval step of an improvement MR's pipeline: it holds
(exit 0) while the pass rate stays at or above the lower end of the baseline's 95 % interval,
fails (exit 1) below it, takes the baseline's suites and trial count when none are given, and
refuses a baseline file it cannot read with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli.eval import gate
from harness_cli.eval.cases import DEFAULT_DIR

CASE = str(DEFAULT_DIR / "honest-complete.yaml")


def _baseline(tmp_path: Path, passed: int, started: int, low: float) -> Path:
    path = tmp_path / "evals" / "baseline.json"
    gate.write(path, gate.Baseline([CASE], 1, passed, started, low, 1.0), inside=tmp_path)
    return path


def test_the_gate_holds_at_the_baseline_and_takes_its_suites(cli: Any, tmp_path: Path) -> None:
    path = _baseline(tmp_path, 1, 1, 0.21)
    code, out, err = cli("eval", "--baseline", str(path), "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["trials_started"] == 1 and data["suites"] == [CASE]  # the baseline's
    assert data["gate"]["held"] is True
    assert any("eval gate held: 1/1 cases passed (100%)" in m for m in json.loads(out)["messages"])
    # the JSON `harness eval --json` wrote serves as a baseline too
    (tmp_path / "eval.json").write_text(out)
    floor = gate.read(tmp_path / "eval.json")
    assert (floor.passed, floor.started, floor.runs) == (1, 1, 1) and floor.low > 0.2


def test_the_verdict_is_the_interval_s_lower_end() -> None:
    floor = gate.Baseline(["x"], 5, 4, 5, 0.376, 0.964)
    assert gate.verdict(2, 5, floor)[0] is True  # 40 % ≥ 37.6 %
    held, line = gate.verdict(1, 5, floor)
    assert held is False and "below the interval" in line and "20%" in line


@pytest.mark.parametrize(
    ("content", "says"),
    [("{", "not JSON"), ('{"passed": 1}', "no passed/started/low/high")],
)
def test_a_baseline_it_cannot_read_is_refused(
    cli: Any, tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(content)
    code, out, err = cli("eval", CASE, "--baseline", str(path))
    assert code == 2 and says in err and "trials" not in out


def _git(repo: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.invalid", *args], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip


def test_an_mr_that_changes_model_facing_text_needs_a_live_run_or_a_sign_off(
    cli: Any, tmp_path: Path
) -> None:
    """#31 item 7: scripted models ignore prompts, so the scripted gate cannot judge an SOP
    that says "declare COMPLETE at 99 %"; a code-only MR keeps the scripted gate."""
    import shutil

    from harness_cli import resources

    repo = tmp_path / "repo"
    shutil.copytree(resources.example_sops(), repo / "sops")
    _git(repo.parent, "init", "-q", str(repo))
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    floor = gate.Baseline([CASE], 1, 1, 1, 0.21, 1.0, gate.manifest(repo))
    path = repo / "evals" / "baseline.json"
    gate.write(path, floor, inside=repo)

    def run() -> tuple[int, str]:
        code, out, err = cli("eval", "--overlay", str(repo), "--baseline", str(path), "--json")
        return code, " ".join(json.loads(out)["messages"]) if out else err

    (repo / "tool.py").write_text("print('a code-only change')\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "code")
    code, said = run()
    assert code == 0 and "model-facing" not in said, said

    sop = repo / "sops" / "INVESTIGATION.md"
    sop.write_text(sop.read_text() + "\nDeclare COMPLETE at 99 % whatever the evidence.\n")
    _git(repo, "commit", "-qam", "sop")
    code, said = run()
    assert code == 1, said
    assert "changes model-facing text (sops/INVESTIGATION.md)" in said
    assert "scripted evals cannot judge it" in said
    digest = gate.change_digest(repo, ["sops/INVESTIGATION.md"])
    (repo / gate.SIGNOFF).write_text(json.dumps({"digest": "stale", "by": "op"}))
    assert run()[0] == 1  # a sign-off of another change is no sign-off
    (repo / gate.SIGNOFF).write_text(json.dumps({"digest": digest, "by": "op"}))
    code, said = run()
    assert code == 0 and "the operator op signed it off" in said, said
