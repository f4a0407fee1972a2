"""The REAL claude CLI, headless and offline, played by the emulator's scripted model.

Nothing here names the CLI's model or its tool list: both change between CLI versions. The
script's own tool calls (Write, Read, Edit) are what must reach the disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.httpbase import Fault

REPO_ROOT = Path(__file__).resolve().parents[2]


def find_claude() -> tuple[str | None, str]:
    """The CLI binary: $HARNESS_CLAUDE_BIN, else the Makefile's install, else PATH."""
    configured = os.environ.get("HARNESS_CLAUDE_BIN")
    if configured:
        found = shutil.which(configured)
        return found, f"HARNESS_CLAUDE_BIN={configured} is not an executable"
    local = REPO_ROOT / ".tools" / "claude" / "node_modules" / ".bin" / "claude"
    if local.exists():
        return str(local), ""
    return shutil.which("claude"), "claude CLI not found: run `make claude-cli`"


CLAUDE, MISSING = find_claude()
pytestmark = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(CLAUDE is None, reason=MISSING),
]


@pytest.fixture(scope="module")
def server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator("smoke")
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def emu(server: AnthropicEmulator) -> AnthropicEmulator:
    server.reset()
    server.load_script("smoke")
    return server


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("title: sandbox notes\nstatus: draft\n")
    return work


def run_claude(
    emu: AnthropicEmulator, cwd: Path, prompt: str, max_turns: int = 6
) -> tuple[int, list[dict[str, Any]], str]:
    home = cwd.parent / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ANTHROPIC_BASE_URL": emu.url,
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }
    assert CLAUDE is not None
    args = [CLAUDE, "-p", prompt, "--output-format", "stream-json", "--verbose"]
    args += ["--permission-mode", "bypassPermissions", "--max-turns", str(max_turns)]
    proc = subprocess.run(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, events, proc.stderr


def tool_calls(events: list[dict[str, Any]]) -> list[str]:
    return [
        block["name"]
        for e in events
        if e.get("type") == "assistant"
        for block in e["message"]["content"]
        if block.get("type") == "tool_use"
    ]


def test_cli_writes_and_edits_files_through_the_scripted_model(
    emu: AnthropicEmulator, workdir: Path
) -> None:
    code, events, stderr = run_claude(
        emu, workdir, "[harness-role: dev-agent] create hello.txt and mark the notes done"
    )
    assert code == 0, stderr[-2000:]
    assert events[0]["type"] == "system" and Path(events[0]["cwd"]).resolve() == workdir.resolve()
    result = events[-1]
    assert result["type"] == "result" and result["subtype"] == "success", result
    assert not result["is_error"]
    assert result["result"] == "Done: created hello.txt and marked notes.txt as done."

    assert (workdir / "hello.txt").read_text() == "hello from the scripted model\n"
    assert (workdir / "notes.txt").read_text() == "title: sandbox notes\nstatus: done\n"
    assert tool_calls(events) == ["Write", "Read", "Edit"]

    assert emu.unmatched() == []
    rules = [c.rule for c in emu.calls if c.role == "dev-agent" and c.tools_present]
    assert rules == [
        "create the new file",
        "read the notes before editing them",
        "mark the notes done",
        "report",
    ]
    assert [c.tool_results for c in emu.calls if c.tools_present] == [0, 1, 1, 1]
    assert all(c.stream for c in emu.calls)
    # The CLI marks its prompt with cache_control; later turns must read what the first wrote.
    assert emu.usage_totals()["cache_read_input_tokens"] > 0


def test_cli_stops_at_max_turns(emu: AnthropicEmulator, workdir: Path) -> None:
    code, events, _ = run_claude(emu, workdir, "[harness-role: dev-agent] go", max_turns=2)
    result = events[-1]
    assert code != 0 and result["type"] == "result"
    assert result["subtype"] == "error_max_turns" and result["is_error"]
    assert (workdir / "hello.txt").exists()  # turn 1 ran
    assert "status: draft" in (workdir / "notes.txt").read_text()  # the Edit never came


def test_cli_retries_a_rate_limit(emu: AnthropicEmulator, workdir: Path) -> None:
    emu.add_fault(
        Fault(kind="status", status=429, match="/v1/messages", headers={"retry-after": "1"})
    )
    code, events, stderr = run_claude(emu, workdir, "[harness-role: dev-agent] go")
    assert code == 0, stderr[-2000:]
    assert events[-1]["subtype"] == "success"
    statuses = [r.status for r in emu.recorded("/v1/messages")]
    assert statuses[0] == 429 and set(statuses[1:]) == {200}
    assert (workdir / "notes.txt").read_text().endswith("status: done\n")
