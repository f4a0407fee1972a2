"""The gated investigation loop end to end: `harness investigate` in-process, the real runtime
(the claude CLI, or the harness's own loop over the real anthropic SDK) and a scripted model in
the Anthropic emulator (``sandbox/scripts/inv_*.yaml``). What is checked is what reached the
case folder and what reached the emulator."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.loop.guard_notes import GUARD_HEADING
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.model_script import RequestView
from harness_cli.services.claude_cli import find_claude
from tests.conftest import REPO

CASE = "AAA-101"
TICKET = (
    "Bulk discount is not applied to orders of exactly 10 units. The README says 10 % off from "
    "10 units on, and an order of 10 × 5.00 is charged 50.00 instead of 45.00."
)
REVIEWERS = ("adversarial-reviewer", "red-team")
CLI_MARKS = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(find_claude() is None, reason="claude CLI not found: run `make claude-cli`"),
]
BOTH = [pytest.param("claude-code", marks=CLI_MARKS), "anthropic"]
"""Parametrize a test with ``runtime`` over these to run it on both runtimes."""

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="session")
def model_server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator()
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def runtime() -> str:
    """The runtime a test runs on unless it parametrizes ``runtime`` itself."""
    return "anthropic"


@dataclass
class Investigation:
    """One test's harness: config copy, case, model script, and readers for what happened."""

    cli: Cli
    emu: AnthropicEmulator
    runtime: str
    config: Path
    root: Path

    # -- set up ----------------------------------------------------------------------------
    def script(self, name: str, **variables: str) -> None:
        self.emu.load_script(name, variables or None)

    def thresholds(self, **values: int) -> None:
        """Override ``investigation:`` numbers in this test's harness.yaml."""
        path = self.config / "harness.yaml"
        data = yaml.safe_load(path.read_text())
        data.setdefault("investigation", {}).update(values)
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def open_case(self, case_id: str = CASE, text: str = TICKET) -> Path:
        ticket = self.root / f"{case_id}.txt"
        ticket.write_text(f"{text} ({case_id})\n")
        code, _, err = self.cli(
            "case", "new", "--project", "team-a", "--id", case_id,
            "--title", f"{case_id}: bulk discount", "--text", str(ticket),
        )  # fmt: skip
        assert code == 0, err
        return self.case_dir(case_id)

    # -- run -------------------------------------------------------------------------------
    def investigate(self, case_id: str = CASE, *, post: bool = False) -> dict[str, Any]:
        args = ["investigate", case_id, "--json", *([] if post else ["--no-post"])]
        code, out, err = self.cli(*args)
        assert code == 0, f"investigate exited {code}: {err}{out}"
        data: dict[str, Any] = json.loads(out)["data"]
        assert not self.emu.unmatched(), self.emu.unmatched()
        return data

    # -- read the case folder --------------------------------------------------------------
    def case_dir(self, case_id: str = CASE) -> Path:
        return self.root / "workspace" / "case-workspaces" / case_id

    def iteration(self, n: int, case_id: str = CASE) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.case_dir(case_id) / "iterations" / f"{n:02d}.json").read_text()
        )
        return data

    def iteration_count(self, case_id: str = CASE) -> int:
        return len(list((self.case_dir(case_id) / "iterations").glob("*.json")))

    def reviews(self, case_id: str = CASE) -> list[int]:
        folder = self.case_dir(case_id) / "review"
        return sorted(int(p.stem) for p in folder.glob("[0-9]*.json")) if folder.exists() else []

    def review(self, n: int, case_id: str = CASE) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.case_dir(case_id) / "review" / f"{n:02d}.json").read_text()
        )
        return data

    def case_json(self, case_id: str = CASE) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.case_dir(case_id) / "case.json").read_text())
        return data

    # -- read the emulator -----------------------------------------------------------------
    def requests(self, role: str | None = None) -> list[dict[str, Any]]:
        """Every /v1/messages body (of ``role``), oldest first."""
        bodies = [r.json_body() for r in self.emu.recorded("/v1/messages")]
        return [b for b in bodies if role is None or RequestView.from_body(b).role == role]

    def prompts(self, role: str = "investigator") -> list[str]:
        """The prompt that opened each conversation of ``role``, in order: the user text block
        carrying the role marker, from the marker on (the CLI puts its own reminders in blocks
        before it; on the claude CLI the run's facts — working directory, writable folder —
        come first in the same block, after the cacheable prefix)."""
        marker = f"[harness-role: {role}]"
        found: list[str] = []
        for body in self.requests(role):
            if RequestView.from_body(body).turn != 0:
                continue
            first = body["messages"][0]["content"]
            blocks = [first] if isinstance(first, str) else [b.get("text", "") for b in first]
            text = next(t for t in blocks if marker in t)
            found.append(text[text.index(marker) :])
        return found

    def assert_guard_notes_at_head(self, prompt: str, *expected: str) -> str:
        """The guard notes open the prompt, right after the role-marker line; returns them."""
        marker, _, rest = prompt.partition("\n")
        assert marker == "[harness-role: investigator]", prompt[:200]
        assert rest.startswith(GUARD_HEADING + "\n"), rest[:300]
        notes = rest.split("\nYou are the on-call investigator", 1)[0]
        for text in expected:
            assert text in notes, f"{text!r} not in the guard notes:\n{notes}"
        return notes

    def assert_no_bash(self) -> None:
        """The investigation bans Bash: no investigator, reviewer or precommit request offers it."""
        for role in ("precommit", "investigator", *REVIEWERS):
            for body in self.requests(role):
                offered = {t.get("name") for t in body.get("tools") or []}
                assert "Bash" not in offered, (role, sorted(offered))


@pytest.fixture
def inv(
    cli: Cli,
    harness_ready: Path,
    model_server: AnthropicEmulator,
    runtime: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Investigation:
    """`harness init` done on a copy of the example config (with ../sops beside it), the
    runtime chosen, and the shared model server reset and pointed at."""
    shutil.copytree(REPO / "sops", tmp_path / "sops")  # harness.yaml: sops_dir ../sops
    model_server.reset()
    monkeypatch.setenv("HARNESS_RUNTIME", runtime)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-investigation")
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # the CLI keeps its sessions under $HOME/.claude
    return Investigation(cli, model_server, runtime, harness_ready, tmp_path)
