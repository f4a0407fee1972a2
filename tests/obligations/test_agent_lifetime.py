"""#20 point 3, end to end: SIGKILL the process running an agent (the real claude CLI, or the
harness's own loop) while the agent's command — and a child it started — are running. Before,
the CLI ran in its own session and worked on after the harness died. Now no process of the run
survives its runner: the parent-death signal and the watchdog (agents/lifetime.py) take the
CLI and its whole process group down with it."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from tests.sandbox.test_runtimes import RUNTIMES, SCRIPT, case, server  # noqa: F401

RUNNER = """
import sys
from pathlib import Path
from harness_cli.agents.factory import build_runtime
from harness_cli.services.runtime import RunRequest

case = Path(sys.argv[2])
req = RunRequest(role="dev-agent", prompt="[harness-role: rt-linger] go", workdir=case,
                 allowed_root=case, max_turns=2)
build_runtime(sys.argv[1]).run(req)
"""


def _lingering(marker: str) -> list[int]:
    """Pids whose command line runs ``sleep <marker>``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv or any(marker.encode() in a and b"sleep" in a for a in argv):
            found.append(int(entry.name))
    return found


def _working_in(folder: Path) -> list[int]:
    """Pids whose working directory is ``folder`` (the claude CLI's sandbox proxy runs in a
    session of its own there, with no marker on its command line)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if Path(os.readlink(f"{entry.path}/cwd")) == folder:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_no_process_of_the_agent_survives_a_sigkill_of_its_runner(
    runtime: str,
    server: AnthropicEmulator,  # noqa: F811
    case: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = f"{random.randint(1000, 9999)}.{os.getpid()}"
    server.reset()
    server.load_script(SCRIPT, {"linger": marker})
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-test-lifetime",
        "HOME": str(home),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, runtime, str(case)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(_lingering(marker)) < 2 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode()[-1500:] if proc.stderr else ""
            time.sleep(0.2)
        assert len(_lingering(marker)) >= 2, "the agent's command never started"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (_lingering(marker) or _working_in(case)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _lingering(marker) == [], "a process of the killed run survived it"
        assert _working_in(case) == [], "a process of the killed run survived it"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _lingering(marker) + _working_in(case):  # only what this test started
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
