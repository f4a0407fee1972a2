"""An agent's processes die with the run that started them — on every exit path, including a
SIGKILL of the harness itself (issue #20 point 3).

The claude CLI runs in its own process group (so a kill takes its tools with it); before this,
a harness killed by cron's timeout, the OOM killer or a reboot left the CLI working on, with
nobody to put back what it changed. Two mechanisms, because either alone has a gap:

- **parent-death signal**: the CLI is started through ``setpriv --pdeathsig KILL`` (util-linux),
  so the kernel kills it the moment the harness process dies;
- **a watchdog**: a tiny shell in its own session holds the read end of a pipe whose only write
  end is the harness's; when the harness dies (or ends the run) the pipe closes and the
  watchdog kills the CLI's whole process group — the tools the CLI started included, which the
  parent-death signal of the CLI alone would leave running — and then every process whose
  environment carries the run's token (the CLI's sandbox proxy runs in a session of its own).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

TOKEN_ENV = "HARNESS_AGENT_RUN"
"""Set in the agent's environment to a token unique to the run: what the watchdog recognises
the run's processes by, including those that left its process group (the claude CLI starts its
sandbox's network proxy in a session of its own)."""

WATCHDOG = r"""
read pg tok || exit 0
cat >/dev/null
kill -KILL -- "-$pg" 2>/dev/null
for round in 1 2; do
  for f in $(grep -lszxF "$TOKEN_ENV=$tok" /proc/[0-9]*/environ); do
    p=${f#/proc/}; kill -KILL "${p%/environ}" 2>/dev/null
  done
done
exit 0
""".replace("$TOKEN_ENV", TOKEN_ENV)
"""Read the process group and the run's token, wait for EOF (the harness closed the pipe or
died), kill the group, then every process carrying the token (twice: one may have been
starting while the first sweep ran)."""


def die_with_parent(argv: list[str]) -> list[str]:
    """``argv`` run so that the kernel kills it when this process dies (when setpriv exists)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return argv
    return [setpriv, "--pdeathsig", "KILL", "--", *argv]


class Watchdog:
    """Kills a process group when this process dies or :meth:`close` is called."""

    def __init__(self) -> None:
        self.token = uuid.uuid4().hex
        read_end, self._write = os.pipe()
        try:
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", WATCHDOG],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # not in our group: a kill of our group spares it
                close_fds=True,
            )
        finally:
            os.close(read_end)

    def env(self) -> dict[str, str]:
        """What the agent's environment must carry for the watchdog to find all of it."""
        return {TOKEN_ENV: self.token}

    def guard(self, pgid: int) -> None:
        """From now on the group ``pgid`` (and every process carrying :meth:`env`) dies with
        this process."""
        with contextlib.suppress(OSError):
            os.write(self._write, f"{pgid} {self.token}\n".encode())

    def close(self) -> None:
        """The run is over: the group is killed (if anything of it is left) and the watchdog
        exits."""
        with contextlib.suppress(OSError):
            os.close(self._write)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def start_time(pid: int) -> str:
    """The process's start time (clock ticks since boot), "" when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes().decode("ascii", "replace")
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]


def kill_group_if_same(pgid: int, started: str) -> bool:
    """Kill the group led by ``pgid`` if its leader is still the process that started at
    ``started`` (a reused pid is never touched). True when something was killed."""
    if pgid <= 1 or not started or start_time(pgid) != started:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
        return True
    return False
