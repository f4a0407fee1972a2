"""What the model is sent, call by call, for the demo ticket (#22's measurement): per role the
size of each request and of its tools, system and messages, the share read from the prompt
cache, and for every call where its prefix first differs from the closest earlier call — read
from the Anthropic emulator's request log (``sandbox/anthropic-requests.jsonl``).

``BENCH_RUNTIMES=claude-code`` (or ``anthropic``) limits the runtimes (default: both, the
claude CLI's only when it is installed); ``BENCH_CALLS=0`` leaves out the per-call lines;
``BENCH_CASE=honest-complete`` reads a case of the eval corpus (evals/investigation:
investigate + review) instead of the demo ticket.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.sandbox.demo import run_demo  # noqa: E402
from harness_cli.sandbox.prompt_prefix import (  # noqa: E402
    CallPrefix,
    analyze,
    read_log,
    render,
    role_summary,
)
from harness_cli.sandbox.runner import ANTHROPIC_BODY_LOG as LOG  # noqa: E402
from harness_cli.sandbox.runner import environment  # noqa: E402
from harness_cli.services.claude_cli import find_claude  # noqa: E402


def runtimes() -> list[str]:
    chosen = [r for r in os.environ.get("BENCH_RUNTIMES", "claude-code,anthropic").split(",") if r]
    if "claude-code" in chosen and find_claude() is None:
        print("  (claude CLI not found: `make claude-cli`; the anthropic runtime only)")
        chosen.remove("claude-code")
    return chosen


def demo(runtime: str) -> list[CallPrefix]:
    with tempfile.TemporaryDirectory(prefix="bench-prefix-") as tmp:
        with environment({"HARNESS_RUNTIME": runtime}):
            report = run_demo(Path(tmp) / "demo", runtime=runtime)
        if not report.ok:
            failed = [s.name for s in report.steps if s.status == "failed"]
            raise SystemExit(f"the demo failed on {runtime}: {', '.join(failed)}")
        return analyze(read_log(Path(tmp) / "demo" / "sandbox" / LOG)[-1])


def library_case(name: str, runtime: str) -> list[CallPrefix]:
    from harness_cli.eval.cases import load_library
    from harness_cli.eval.investigation_driver import run_case
    from harness_cli.sandbox.anthropic_api import AnthropicEmulator

    [case] = [c for c in load_library() if c.id == name]
    with tempfile.TemporaryDirectory(prefix="bench-prefix-") as tmp:
        emu = AnthropicEmulator(body_log=Path(tmp) / LOG)
        emu.start()
        try:
            run_case(case, runtime, anthropic=emu)
        finally:
            emu.stop()
        return analyze(read_log(Path(tmp) / LOG)[-1])


def main() -> None:
    per_call = os.environ.get("BENCH_CALLS", "1") != "0"
    case = os.environ.get("BENCH_CASE")
    for runtime in runtimes():
        calls = library_case(case, runtime) if case else demo(runtime)
        what = f"the eval case {case}" if case else "the demo ticket"
        print(f"== {what} on {runtime}: {len(calls)} model requests (tokens ≈ chars/4)")
        print("\n".join(role_summary(calls)))
        if per_call:
            print()
            print("\n".join(render(calls)))
        print()


if __name__ == "__main__":
    main()
