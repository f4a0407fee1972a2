"""Shared set-up for the self-improvement tests: cases in the workspace with the evidence a real
run leaves (iteration and review verdicts, the exit line, gap reports), and the harness's own
repository on the GitLab emulator for finalize end to end."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from tests.conftest import REPO

HARNESS_REPO = "acme/harness"
INVESTIGATOR_PROMPT = "# investigator\n\nYou investigate the ticket.\nCheck the logs first.\n"
HARNESS_FILES = {
    "README.md": "# harness\n",
    "Makefile": (
        "test:\n\tpython3 -c 'import ast, pathlib; "
        '[ast.parse(p.read_text()) for p in pathlib.Path("harness_cli").rglob("*.py")]\'\n'
    ),
    "harness_cli/__init__.py": '"""harness"""\n',
    "agent-config/prompts/investigator.md": INVESTIGATOR_PROMPT,
    "sops/STYLE.md": "# Style SOP\n",
    "tests/test_ok.py": "def test_ok():\n    assert True\n",
}
"""The harness repo as the sandbox seeds it: `make test` is a Python syntax check (fast, real),
its CI runs pytest."""


def report_block(**fields: Any) -> str:
    report = {
        "status": "COMPLETE",
        "confidence": 80,
        "open_questions": [],
        "unchecked_sources": [],
        "contradiction_register": [],
        "assumption_register": ["the README states the rule"],
        "adjacent_problems": [],
        "draft_response": "Fixed.",
        "causal_chain_complete": True,
        "root_cause": {"summary": "x", "evidence": [{"claim": "y", "kind": "HARD"}]},
        "actions": [],
        "new_facts": ["one"],
        **fields,
    }
    return "Done.\n```json\n" + json.dumps(report) + "\n```\n"


def violation(code: str, message: str = "") -> dict[str, str]:
    return {"code": code, "message": message or f"{code} fired", "effect": "guard_note"}


def write_iteration(folder: Path, n: int, codes: list[str], output: str = "") -> None:
    path = folder / "iterations" / f"{n:02d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    verdict = {"ceiling": 80, "confidence": 70, "violations": [violation(c) for c in codes]}
    path.write_text(json.dumps({"iteration": n, "verdict": verdict, "output": output}))


def write_review(folder: Path, n: int, codes: list[str]) -> None:
    path = folder / "review" / f"{n:02d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    verdict = {"ceiling": 80, "confidence": 70, "violations": [violation(c) for c in codes]}
    path.write_text(json.dumps({"after_iteration": n, "verdict": verdict}))


def new_case(
    case_id: str,
    *,
    project: str = "team-a",
    status: str | None = None,
    exit_line: str | None = None,
) -> Path:
    """A case folder with ``case.json``; ``status`` walks the legal path to it."""
    from harness_cli.config import load_config
    from harness_cli.workspace import registry

    thresholds = load_config().harness.thresholds
    opened = registry.open_case(
        thresholds, case_id=case_id, project=project, title=f"{case_id}: ticket", sync_now=False
    )
    route = {
        None: [],
        "closed": ["closed"],
        "merged": ["investigating", "awaiting_approval", "approved", "in_progress", "mr_open",
                   "merged"],
        "awaiting_approval": ["investigating", "awaiting_approval"],
    }[status]  # fmt: skip
    if route or exit_line:
        with registry.update_case(case_id, thresholds, "test set-up") as case:
            for step in route:
                case.move(step, by="test")
            if exit_line:
                case.exit = exit_line
    return opened.dir


@pytest.fixture(scope="session")
def model_server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator("improvement")
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def ready(harness_ready: Path, tmp_path: Path) -> Path:
    """`harness init` on the example config, with ../sops beside it (harness.yaml's sops_dir).
    finalize's before/after eval is off here (tests/improvement/test_finalize_eval.py runs it)."""
    shutil.copytree(REPO / "sops", tmp_path / "sops")
    path = harness_ready / "harness.yaml"
    path.write_text(path.read_text().replace("eval_suites: [investigation]", "eval_suites: []"))
    return harness_ready
