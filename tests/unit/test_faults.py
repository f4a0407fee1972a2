"""The crash-point seam: unarmed it does nothing; armed, the process SIGKILLs itself at the nth
hit of the named point and nowhere else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from harness_cli import faults

SCRIPT = """
from harness_cli.faults import crash_point
for i in range(3):
    crash_point("a.b")
    print("after a.b", i, flush=True)
    crash_point("c")
"""


def _run(spec: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != faults.ENV}
    if spec is not None:
        env[faults.ENV] = spec
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=False
    )


def test_unarmed_and_armed_elsewhere_nothing_happens() -> None:
    for spec in (None, "", "x.y", "c:9"):
        proc = _run(spec)
        assert proc.returncode == 0 and proc.stdout.count("after a.b") == 3, spec


def test_the_nth_hit_of_the_named_point_kills_the_process() -> None:
    proc = _run("a.b:2")
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout.splitlines() == ["after a.b 0"]
    proc = _run("zz, c:1")
    assert proc.returncode == -signal.SIGKILL and proc.stdout.splitlines() == ["after a.b 0"]


def test_every_point_says_what_it_follows() -> None:
    assert all(faults.POINTS.values())
    assert all(name.count(".") == 1 for name in faults.POINTS)
