"""The memory workflows end to end: `harness followup` / `harness consolidate` in-process, the
harness's own runtime over the real anthropic SDK against the Anthropic emulator (a scripted
model, ``sandbox/scripts/memory.yaml`` unless a test loads its own), and Slack through the Slack
emulator and the real slack_sdk. What is checked is what reached the case folder, the thread and
the model."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness_cli.outbox.outbound import is_own_post
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.model_script import RequestView
from tests.conftest import REPO

CASE = "AAA-101"
DM = "D0SELF"
OPERATOR = "U0OPERATOR"
OWN = {"event_type": "harness_post", "event_payload": {"kind": "post"}}
"""The metadata of a harness post (``ops.outbound.own_metadata``; the outbox adds its key)."""
TICKET = (
    "Bulk discount is not applied to orders of exactly 10 units. The README says 10 % off from "
    "10 units on, and an order of 10 × 5.00 is charged 50.00 instead of 45.00."
)
TASK_MD = """# AAA-101 — what to do

Investigation: `exit=complete confidence=88%  iterations=2  elapsed=1min`

## May run by itself (confidence ≥ auto-run bar, non-destructive)

- change the comparison to >= in pricing/discount.py — verify: python -m pytest -q
  tests/test_discount.py; expect 5 passed (in the MR pipeline)
"""
ANALYSIS_MD = """# AAA-101 — analysis

`exit=complete confidence=88%  iterations=2  elapsed=1min`

## Root cause

bulk_discount uses > instead of >= against BULK_THRESHOLD, so exactly 10 units get no discount

- [HARD] pricing/discount.py: `if quantity > BULK_THRESHOLD:` (acme/pricing-service@main)
- [HARD] 10 × 5.00 charged 50.00 instead of 45.00 (message.json)
"""

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="session")
def model_server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator()
    emulator.start()
    yield emulator
    emulator.stop()


def last_json(out: str) -> dict[str, Any]:
    """The command's own result: the last JSON line (an inline-dispatched workflow prints its
    result before it)."""
    lines = [line for line in out.splitlines() if line.startswith("{")]
    data: dict[str, Any] = json.loads(lines[-1])
    return data


@dataclass
class Memory:
    cli: Cli
    emu: AnthropicEmulator
    slack: Any
    config: Path
    root: Path
    parent_ts: str = ""

    # -- set up --------------------------------------------------------------------------------
    def open_case(
        self,
        case_id: str = CASE,
        *,
        status: str = "awaiting_approval",
        task: str | None = TASK_MD,
        analysis: str | None = ANALYSIS_MD,
        thread: bool = True,
    ) -> Path:
        """A case as an investigation leaves it: TASK.md, ANALYSIS.md, the status, and a case
        thread in the self-DM whose parent is the harness's own post."""
        from harness_cli.config import load_config
        from harness_cli.workspace import registry

        ticket = self.root / f"{case_id}.txt"
        ticket.write_text(f"{TICKET} ({case_id})\n")
        code, _, err = self.cli(
            "case", "new", "--project", "team-a", "--id", case_id,
            "--title", f"{case_id}: bulk discount", "--text", str(ticket),
        )  # fmt: skip
        assert code == 0, err
        folder = self.case_dir(case_id)
        if task is not None:
            (folder / "TASK.md").write_text(task)
        if analysis is not None:
            (folder / "ANALYSIS.md").write_text(analysis)
        path = {
            "new": [],
            "investigating": ["investigating"],
            "awaiting_approval": ["investigating", "awaiting_approval"],
            "merged": ["investigating", "awaiting_approval", "approved", "in_progress",
                       "mr_open", "merged"],
        }[status]  # fmt: skip
        thresholds = load_config().harness.thresholds
        for step in path:
            with registry.update_case(case_id, thresholds, step) as case:
                case.move(step, by="test")
        if thread:
            parent = self.slack.post_as(
                DM, OPERATOR, f"New ticket → case *{case_id}*", metadata=OWN
            )
            self.parent_ts = parent["ts"]
            registry.register_thread(
                registry.load_case(case_id), channel=DM, thread_ts=parent["ts"], role="case_thread"
            )
        return folder

    def reply(self, text: str, *, user: str = OPERATOR) -> str:
        return str(self.slack.post_as(DM, user, text, thread_ts=self.parent_ts)["ts"])

    def script(self, name: str = "memory", **variables: str) -> None:
        self.emu.load_script(name, variables or None)

    def inline_script(self, roles: dict[str, Any]) -> None:
        self.emu.load_script({"schema_version": 1, "roles": roles})

    # -- run -----------------------------------------------------------------------------------
    def followup(self, *args: str, case_id: str = CASE, expect: int = 0) -> dict[str, Any]:
        code, out, err = self.cli("followup", case_id, "--json", *args)
        assert code == expect, f"followup exited {code}: {err}{out}"
        return last_json(out)

    def consolidate(self, *args: str, expect: int = 0) -> dict[str, Any]:
        code, out, err = self.cli("consolidate", *args, "--json")
        assert code == expect, f"consolidate exited {code}: {err}{out}"
        return last_json(out)

    # -- read ----------------------------------------------------------------------------------
    def case_dir(self, case_id: str = CASE) -> Path:
        return self.root / "workspace" / "case-workspaces" / case_id

    def transcripts(self, case_id: str = CASE) -> list[Path]:
        return sorted(self.case_dir(case_id).glob("followup_transcript_*.md"))

    def thread_posts(self) -> list[dict[str, Any]]:
        """The harness's posts in the case thread (after the parent), oldest first."""
        return [
            m
            for m in self.slack.messages(DM, metadata=True)
            if m.get("thread_ts") == self.parent_ts and m["ts"] != self.parent_ts and is_own_post(m)
        ]

    def requests(self, role: str | None = None) -> list[dict[str, Any]]:
        bodies = [r.json_body() for r in self.emu.recorded("/v1/messages")]
        return [b for b in bodies if role is None or RequestView.from_body(b).role == role]

    def prompts(self, role: str = "followup") -> list[str]:
        """The prompt that opened each conversation of ``role``, in order."""
        marker = f"[harness-role: {role}]"
        found: list[str] = []
        for body in self.requests(role):
            if RequestView.from_body(body).turn != 0:
                continue
            first = body["messages"][0]["content"]
            blocks = [first] if isinstance(first, str) else [b.get("text", "") for b in first]
            found.append(next(t for t in blocks if marker in t))
        return found


@pytest.fixture
def mem(
    cli: Cli,
    harness_ready: Path,
    model_server: AnthropicEmulator,
    slack_emu: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Memory:
    """`harness init` on a copy of the example config (with ../sops beside it), the anthropic
    runtime pointed at the shared model server (reset, memory.yaml loaded), Slack at its
    emulator."""
    shutil.copytree(REPO / "sops", tmp_path / "sops")
    model_server.reset()
    model_server.load_script("memory")
    monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-memory")
    return Memory(cli, model_server, slack_emu, harness_ready, tmp_path)
