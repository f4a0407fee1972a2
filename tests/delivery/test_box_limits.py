"""The box has bounds of its own and the harness reads what comes out of it in bounded buffers
(#28 R10, R11), on both runtimes, end to end: `harness dev-agent` on the emulators, real
worktrees, the real claude CLI or the harness's own loop, the default harness.yaml.

- R11: the agent's command forks 400 processes and allocates 1.5 GB (the red team reached 405
  and 1.5 GB): the defaults (256 processes, 1024 MB) refuse both, inside the command.
- R10: the agent's command prints 300 MB and the conftest.py it adds prints 300 MB more when the
  harness runs the required checks: the harness process's peak memory stays under what was
  printed (before, it read both whole: ~2× each), and the ends of both still reach their
  readers (the model, the acceptance record)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import Sandbox
from tests.delivery.test_agent_boundaries import BOTH, approved_case, model_log
from tests.delivery.test_agent_boundaries import box as box

pytestmark = pytest.mark.slow

PRINTED_MB = 300


@pytest.mark.parametrize("runtime", BOTH)
def test_the_box_refuses_a_fork_flood_and_a_huge_allocation(
    cli: Any,
    box: Sandbox,
    runtime: str,
) -> None:
    assert cli("init")[0] == 0
    approved_case(cli, "AAA-101")
    box.anthropic.load_script("dev_hog", {})

    assert cli("admin", "task AAA-101 --auto")[0] == 0
    code, _, err = cli("dev-agent", "AAA-101", "--mode", "task", "--auto", "--json")

    assert code == 1, err  # nothing delivered: a failed run, as for any task without a change
    assert box.anthropic.unmatched() == []
    log = model_log(box)
    # what the command printed (never its own text, which the log holds too)
    assert "hog done-42" in log  # it ran to its end, inside its limits
    assert "hog fork-refused-after" in log and "hog forked-all" not in log
    assert "hog allocation-refused" in log and "hog allocated" not in log


def _peak_rss_mb(proc: subprocess.Popen[bytes]) -> int:
    """The process's own peak resident size (VmHWM), sampled until it exits: its children (the
    claude CLI, the checks) are not counted, only what the harness itself held."""
    peak = 0
    while proc.poll() is None:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            break
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]) // 1024)
        threading.Event().wait(0.05)
    return peak


@pytest.mark.parametrize("runtime", BOTH)
def test_a_run_that_prints_without_end_leaves_the_harness_memory_flat(
    cli: Any,
    box: Sandbox,
    tmp_path: Path,
    runtime: str,
) -> None:
    assert cli("init")[0] == 0
    approved_case(cli, "AAA-101")
    # on claude-code the CLI reads its Bash's output, not the harness: the checks' is the test
    shell_mb = PRINTED_MB if runtime == "anthropic" else 0
    box.anthropic.load_script("dev_loud", {"shell_mb": str(shell_mb), "check_mb": str(PRINTED_MB)})
    assert cli("admin", "task AAA-101 --auto")[0] == 0

    proc = subprocess.Popen(
        [sys.executable, "-m", "harness_cli", "dev-agent", "AAA-101", "--mode", "task", "--auto"],
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    peak = _peak_rss_mb(proc)
    _, err = proc.communicate(timeout=600)

    assert box.anthropic.unmatched() == []
    # before: the whole output read, decoded, then cut (> 2 × PRINTED_MB)
    assert 0 < peak < PRINTED_MB, f"the harness peaked at {peak} MB"
    # the checks ran and printed it all, and the record kept their end
    records = [
        json.loads(p.read_text()) for p in tmp_path.rglob("acceptance/latest.json") if p.is_file()
    ]
    assert records, err.decode()[-2000:]
    [check] = records[0]["checks"]
    assert check["stdout_bytes"] > PRINTED_MB * 1_000_000
    assert "loud: the end of the check output" in check["stdout_tail"]
    if runtime == "anthropic":  # the harness's own Bash tool: the model got the log's end
        assert "loud end-of-log" in model_log(box)
        assert "bytes left out" in model_log(box)
