"""What the crash campaigns measure after one clean run, shared by the tests (which assert each
figure is 0) and bench/bench_crash_workflows.py (which runs the full walk and sums them):
``killed`` (the SIGKILL landed), ``duplicates`` (a post or MR made twice), ``lost`` (one never
made), ``stuck`` (the case left in a run's in-between status), ``uncommitted`` (case files left
out of the workspace's HEAD)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

FULL = bool(os.environ.get("HARNESS_BENCH_FULL"))
"""The bench's full walk: every write step, more random instants."""
RANDOM = pytest.mark.skipif(
    not FULL, reason="random instants: bench/bench_crash_workflows.py (HARNESS_BENCH_FULL=1)"
)
"""A campaign's random-instant variants: the default run walks the write steps only."""


def harness(
    *args: str, env: dict[str, str] | None = None, stdout: int | IO[bytes] = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """``harness ARGS`` as its own process (a campaign SIGKILLs it), ``env`` laid over ours."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness_cli", *args],
        env={**os.environ, **(env or {})},
        stdout=stdout,
        stderr=subprocess.PIPE,
    )


def record(workflow: str, point: str, figures: dict[str, Any]) -> None:
    """Append one run's figures to the bench's file (when the bench runs the tests)."""
    target = os.environ.get("HARNESS_BENCH_RECORD")
    if target:
        # the forge of a test parametrized over both (tests/conftest.py `forge`), from its id
        running = os.environ.get("PYTEST_CURRENT_TEST", "")
        forge = next((f for f in ("gitlab", "github") if f"[{f}" in running), "")
        row = {"workflow": workflow, "point": point, "forge": forge, **figures}
        with Path(target).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")


def assert_clean(figures: dict[str, Any]) -> None:
    bad = {k: v for k, v in figures.items() if k not in ("killed", "detail") and v}
    assert not bad, (bad, figures.get("detail"))
