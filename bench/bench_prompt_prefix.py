"""What the model is sent, call by call, for the demo ticket (#22's measurement): per role the
size of each request and of its tools, system and messages, the share read from the prompt
cache, and for every call where its prefix first differs from the closest earlier call — read
from the Anthropic emulator's request log (``sandbox/anthropic-requests.jsonl``).

``BENCH_RUNTIMES=claude-code`` (or ``anthropic``) limits the runtimes (default: both, the
claude CLI's only when it is installed); ``BENCH_CALLS=0`` leaves out the per-call lines.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.sandbox.demo import run_demo  # noqa: E402
from harness_cli.sandbox.prompt_prefix import analyze, read_log, render, role_summary  # noqa: E402
from harness_cli.sandbox.runner import ANTHROPIC_BODY_LOG as LOG  # noqa: E402
from harness_cli.sandbox.runner import environment  # noqa: E402
from harness_cli.services.claude_cli import find_claude  # noqa: E402


def runtimes() -> list[str]:
    chosen = [r for r in os.environ.get("BENCH_RUNTIMES", "claude-code,anthropic").split(",") if r]
    if "claude-code" in chosen and find_claude() is None:
        print("  (claude CLI not found: `make claude-cli`; the anthropic runtime only)")
        chosen.remove("claude-code")
    return chosen


def main() -> None:
    per_call = os.environ.get("BENCH_CALLS", "1") != "0"
    for runtime in runtimes():
        with tempfile.TemporaryDirectory(prefix="bench-prefix-") as tmp:
            with environment({"HARNESS_RUNTIME": runtime}):
                report = run_demo(Path(tmp) / "demo", runtime=runtime)
            if not report.ok:
                failed = [s.name for s in report.steps if s.status == "failed"]
                raise SystemExit(f"the demo failed on {runtime}: {', '.join(failed)}")
            [calls] = [analyze(run) for run in read_log(Path(tmp) / "demo" / "sandbox" / LOG)]
        print(f"== the demo ticket on {runtime}: {len(calls)} model requests (tokens ≈ chars/4)")
        print("\n".join(role_summary(calls)))
        if per_call:
            print()
            print("\n".join(render(calls)))
        print()


if __name__ == "__main__":
    main()
