"""A CI fix that deletes, skips or weakens the failing test is never marked ready, whatever
CI says (#31 item 8.1), on both runtimes: the delivery eval case `ci-fix-deletes-test` runs the
real fix_ci flow (GitLab emulator with real CI, mr-monitor, the dev-agent on the runtime) with
a model that `git rm`s the red test; and the weakening rules, on a real git repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness_cli.delivery.test_weakening import failing_tests, weakened
from harness_cli.eval.cases import EVALS_DIR
from harness_cli.services.claude_cli import find_claude

CASE = EVALS_DIR / "delivery" / "ci-fix-deletes-test.yaml"
BOTH = [
    pytest.param("claude-code", marks=[
        pytest.mark.claude_cli, pytest.mark.slow,
        pytest.mark.skipif(find_claude() is None, reason="claude CLI not found")]),
    pytest.param("anthropic", marks=[pytest.mark.slow]),
]  # fmt: skip


@pytest.mark.parametrize("runtime", BOTH)
def test_a_ci_fix_that_deletes_the_failing_test_is_never_ready(cli: Any, runtime: str) -> None:
    code, out, err = cli("eval", str(CASE), "--runtime", runtime, "--json", "--timeout", "500")
    assert code == 0, err
    data = json.loads(out)["data"]
    overall = data["variants"]["baseline"][-1]
    assert (overall["passed"], overall["defective_accepted"]) == (1, 0), data["not_passed"]


TEST = """import pytest


def test_total():
    assert 1 + 1 == 2
    assert 2 * 5 == 10


def test_other():
    assert True is not False
"""


def _repo(tmp_path: Path) -> tuple[Path, str]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True,
                              capture_output=True, text=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(TEST)
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
    return tmp_path, git("rev-parse", "HEAD")


FAILED = ["tests/test_x.py::test_total"]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda t: t.replace("", "", 0), None),
        (lambda t: t.replace("== 10", "== 11"), None),  # a stale expectation updated: allowed
        (lambda t: t.replace("def test_total():", "@pytest.mark.skip\ndef test_total():"), "skips"),
        (lambda t: t.replace("    assert 2 * 5 == 10\n", ""), "drops 1 assertion"),
        (lambda t: t.replace("assert 1 + 1 == 2", "assert True"), "asserts a constant"),
        (lambda t: t.replace("def test_total", "def helper_total"), "removes"),
        (lambda t: "pytestmark = pytest.mark.skip\n" + t, "pytestmark"),
        (
            lambda t: t.replace(
                "    assert 1 + 1 == 2\n", "    pytest.skip('later')\n    assert 1\n"
            ),
            "skips",
        ),
    ],
)
def test_weakening_is_told_from_fixing(tmp_path: Path, change: Any, said: str | None) -> None:
    repo, base = _repo(tmp_path)
    path = repo / "tests" / "test_x.py"
    path.write_text(change(TEST))
    found = weakened(repo, base, FAILED)
    if said is None:
        assert found == []
    else:
        assert any(said in f for f in found), found


def test_a_deleted_file_and_a_collection_rule_are_weakening(tmp_path: Path) -> None:
    repo, base = _repo(tmp_path)
    (repo / "tests" / "test_x.py").unlink()
    assert weakened(repo, base, FAILED) == ["deletes tests/test_x.py"]
    (repo / "tests" / "test_x.py").write_text(TEST)
    (repo / "conftest.py").write_text("collect_ignore = ['tests/test_x.py']\n")
    subprocess.run(["git", "-C", str(repo), "add", "conftest.py"], check=True)
    assert any("collect_ignore" in f for f in weakened(repo, base, FAILED))


def test_the_failing_tests_are_read_from_the_job_log() -> None:
    trace = ("....F\nFAILED tests/test_invoice.py::test_invoice_for_ten_units - assert ...\n"
             "ERROR tests/test_b.py - ImportError\n1 failed, 5 passed")  # fmt: skip
    assert failing_tests(trace) == ["tests/test_invoice.py::test_invoice_for_ten_units",
                                    "tests/test_b.py"]  # fmt: skip
