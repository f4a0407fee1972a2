"""What the benchmarks that drive the CLI in-process share (not a benchmark itself)."""

from __future__ import annotations

import contextlib
import io

from harness_cli.cli import run
from harness_cli.sandbox.runner import environment

__all__ = ["environment", "harness"]


def harness(*argv: str) -> str:
    """Run ``harness ARGV`` here; its output, or exit the benchmark with it on failure."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = run(list(argv))
    if code != 0:
        raise SystemExit(f"harness {' '.join(argv)} exited {code}: {out.getvalue()}")
    return out.getvalue()
