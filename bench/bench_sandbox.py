"""What the agents' sandbox costs (#17 p1; goal: ≤ 50 ms added per agent command).

1. One agent command (the harness's own loop's Bash tool, ``true`` in a worktree-sized view):
   in bubblewrap vs the same tool unboxed, alternated, median of each.
2. One dev-agent-sized run on the claude CLI (the scripted model asks for 4 Bash commands):
   with the CLI's sandbox vs without it, alternated, median of each; the difference divided by
   the number of commands is the added time per command there.

Run: ``.venv/bin/python bench/bench_sandbox.py`` (needs bwrap, socat and the pinned claude CLI
for part 2; part 2 is skipped without the CLI).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

from harness_cli.agents import sandbox, tools
from harness_cli.agents.claude_code import ClaudeCodeRuntime
from harness_cli.agents.sandbox_settings import SandboxSettings
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.services.claude_cli import find_claude
from harness_cli.services.runtime import RunRequest

COMMANDS = 40
RUNS = 4
BASH_CALLS = 4


def per_command(root: Path) -> tuple[float, float]:
    home = root / "home"
    home.mkdir()
    work = root / "work"
    work.mkdir()
    box = sandbox.view_for(work, [work], [], home)
    boxed = tools.ToolContext(work, work, time.monotonic() + 600, (work,), box, home)
    plain = tools.ToolContext(work, work, time.monotonic() + 600, (work,), None, home)
    timings: dict[str, list[float]] = {"boxed": [], "plain": []}
    for _ in range(COMMANDS):
        for name, ctx in (("boxed", boxed), ("plain", plain)):
            started = time.perf_counter()
            tools.call(tools.TOOLS["Bash"], ctx, {"command": "true"})
            timings[name].append(time.perf_counter() - started)
    return statistics.median(timings["boxed"]), statistics.median(timings["plain"])


def per_claude_run(root: Path) -> tuple[float, float] | None:
    binary = find_claude()
    if binary is None:
        return None
    calls = [{"name": "Bash", "input": {"command": f"echo {n}"}} for n in range(BASH_CALLS)]
    script = {
        "roles": {
            "default": [{"when": {"tools": "absent"}, "reply": {"text": '{"title": "b"}'}}],
            "bench": [
                *(
                    {"when": {"turn": n, "tools": "present"}, "reply": {"tool_calls": [c]}}
                    for n, c in enumerate(calls)
                ),
                {"reply": {"text": "done"}},
            ],
        }
    }
    emu = AnthropicEmulator(script)
    emu.start()
    os.environ.update(ANTHROPIC_BASE_URL=emu.url, ANTHROPIC_API_KEY="sk-ant-bench-sandbox")
    os.environ.update(HOME=str(root / "user-home"), DISABLE_TELEMETRY="1")
    work = root / "claude-work"
    work.mkdir()
    req = RunRequest(
        role="dev-agent", prompt="[harness-role: bench] go", workdir=work, allowed_root=work
    )
    timings: dict[str, list[float]] = {"boxed": [], "plain": []}
    unboxed = SandboxSettings(required=False)
    try:
        for _ in range(RUNS):
            started = time.perf_counter()
            result = ClaudeCodeRuntime(binary=binary).run(req)
            timings["boxed"].append(time.perf_counter() - started)
            assert result.ok, result.error
            with mock.patch.object(sandbox, "problem", return_value="bench: sandbox off"):
                started = time.perf_counter()
                result = ClaudeCodeRuntime(binary=binary, sandbox_settings=unboxed).run(req)
                timings["plain"].append(time.perf_counter() - started)
            assert result.ok, result.error
    finally:
        emu.stop()
    return statistics.median(timings["boxed"]), statistics.median(timings["plain"])


def main() -> int:
    if sandbox.problem("anthropic") is not None:
        print(f"skipped: {sandbox.problem('anthropic')}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        boxed, plain = per_command(Path(tmp))
        added = (boxed - plain) * 1000
        print(f"agent command (anthropic loop Bash `true`, median of {COMMANDS}):")
        print(f"  in bubblewrap {boxed * 1000:.1f} ms, unboxed {plain * 1000:.1f} ms")
        verdict = "ok" if added <= 50 else "OVER"
        print(f"  added {added:.1f} ms per command (goal <= 50 ms): {verdict}")
        found = per_claude_run(Path(tmp))
    if found is None:
        print("claude CLI run: skipped (no claude CLI)")
        return 0 if added <= 50 else 1
    boxed_run, plain_run = found
    per = (boxed_run - plain_run) * 1000 / BASH_CALLS
    print(f"dev-agent run on the claude CLI ({BASH_CALLS} Bash commands, median of {RUNS}):")
    print(f"  with its sandbox {boxed_run:.2f} s, without {plain_run:.2f} s")
    print(f"  added {(boxed_run - plain_run) * 1000:.0f} ms per run, {per:.0f} ms per command")
    return 0 if added <= 50 else 1


if __name__ == "__main__":
    sys.exit(main())
