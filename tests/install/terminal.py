"""Run a command the way an operator watches it: stderr on a pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (what an operator watches) and stdout on a pipe."""
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=slave, cwd=cwd, env=env, stdin=subprocess.DEVNULL
    )
    os.close(slave)
    screen = b""
    assert proc.stdout is not None
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                chunk = b""
            screen += chunk
            if not chunk and proc.poll() is not None:
                break
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode()
    os.close(master)
    return proc.wait(timeout=300), out, screen.decode("utf-8", "replace")
