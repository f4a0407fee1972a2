"""The box's own bounds (#28 R11): processes, memory, CPU time and file size of what an agent
runs — its commands, the checks that run its code, and on claude-code the CLI's whole tree.

Before, the box bounded what an agent could *see* and nothing of what it could *take*: a red
team started 405 processes and allocated 1.5 GB in it. Two mechanisms, each for what it does
well (harness.yaml ``sandbox.limits``, whose numbers are ``sandbox_settings.LimitSettings``):

- **a cgroup per command** (per claude CLI run), for the totals of the whole process tree:
  ``pids.max`` and the memory limit, through the cgroup filesystem or ``systemd-run --user
  --scope`` (:mod:`harness_cli.agents.cgroups`).
- **rlimits** through ``prlimit`` (util-linux), per process and inherited: ``RLIMIT_CPU``
  (CPU seconds), ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_DATA`` (one process's heap — not
  ``RLIMIT_AS``, which breaks runtimes that reserve address space, node's among them), and
  ``RLIMIT_NPROC``. NPROC counts every process of the *user*, not of the box, so it is set only
  inside the harness's own bubblewrap box (a fresh user namespace, where it counts the box's
  processes alone) and never for root, whom the kernel exempts: there the cgroup's pids.max is
  the bound, and ``harness doctor`` says when no cgroup is to be had.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_cli.agents import cgroups
from harness_cli.agents.cgroups import MB
from harness_cli.agents.sandbox_settings import LimitSettings

CLI_SHARE_MB = 512
"""What the claude CLI itself (node, its sandbox's proxy) uses besides the agent's commands,
added to ``memory_mb`` for a CLI run's tree so the CLI is not what the limit kills."""
CLI_SHARE_PIDS = 64
"""The CLI's own threads and helpers, added to ``pids`` for its tree."""


@dataclass
class Wrap:
    """How one bounded run is started: ``outer`` goes around everything (the box, or the
    claude CLI), ``inner`` just before the command, inside the box; :meth:`popen` starts it
    (in its cgroup: see :class:`cgroups.Entry`)."""

    outer_prefix: list[str] = field(default_factory=list)
    inner_prefix: list[str] = field(default_factory=list)
    spawn: cgroups.Spawn = subprocess.Popen

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """``subprocess.Popen(argv, **kwargs)`` for an argv already wrapped by :meth:`outer`."""
        return self.spawn(list(argv), **kwargs)

    def outer(self, argv: Sequence[str]) -> list[str]:
        return [*self.outer_prefix, *argv]

    def inner(self, argv: Sequence[str]) -> list[str]:
        return [*self.inner_prefix, *argv]


@contextlib.contextmanager
def applied(settings: LimitSettings, *, own_userns: bool, cli: bool = False) -> Iterator[Wrap]:
    """The limits of one agent command (or, ``cli``, one claude CLI run and its tree): its own
    cgroup while it runs (anything left in it killed afterwards) and its rlimits.
    ``own_userns``: the command runs in a fresh user namespace (the harness's bwrap box), the
    one place RLIMIT_NPROC counts its processes alone."""
    pids = settings.pids + (CLI_SHARE_PIDS if cli else 0) if settings.pids else None
    memory = settings.memory_mb + (CLI_SHARE_MB if cli else 0) if settings.memory_mb else None
    inner = rlimits(settings, nproc=own_userns and os.geteuid() != 0)
    with cgroups.entered(cgroups.plan(settings.cgroup), pids=pids, memory_mb=memory) as entry:
        yield Wrap(entry.prefix, inner, entry.spawn)


def rlimits(settings: LimitSettings, *, nproc: bool) -> list[str]:
    """``prlimit --cpu=… --fsize=… --data=… [--nproc=…] --`` (soft = hard: the command cannot
    raise them); empty without prlimit (doctor says so)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    args = [f"--cpu={settings.cpu_seconds}"] if settings.cpu_seconds else []
    args += [f"--fsize={settings.file_size_mb * MB}"] if settings.file_size_mb else []
    args += [f"--data={settings.memory_mb * MB}"] if settings.memory_mb else []
    args += [f"--nproc={settings.pids}"] if nproc and settings.pids else []
    return [prlimit, *args, "--"] if args else []


# -- what doctor says -------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One line of ``harness doctor`` about the limits."""

    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


NO_CGROUP_FIX = (
    "give the harness a cgroup: run it as root with the cgroup filesystem writable, or as a "
    "user with a systemd user session (`loginctl enable-linger <user>`; from cron also "
    "XDG_RUNTIME_DIR=/run/user/<uid>)"
)


def diagnose(settings: LimitSettings, runtime: str) -> list[Finding]:
    """Whether each limit can be applied on this machine for ``runtime``, one line each; the
    last line is a real bounded run of ``true``."""
    found = cgroups.plan(settings.cgroup)
    prlimit = shutil.which("prlimit")
    fix = NO_CGROUP_FIX if settings.cgroup != "off" else "set sandbox.limits.cgroup: auto"
    cli = runtime == "claude-code"
    box = "the claude CLI's tree" if cli else "each agent command"
    pids_cli = f" (+{CLI_SHARE_PIDS} for the CLI itself)" * cli
    memory_cli = f" (+{CLI_SHARE_MB} MB for the CLI itself)" * cli
    out: list[Finding] = []
    name = "box limit: processes"
    if not settings.pids:
        out.append(Finding(name, "warn", "off (sandbox.limits.pids: null)", "set a number"))
    elif found.way:
        detail = f"at most {settings.pids}{pids_cli} in {box} ({found.detail})"
        out.append(Finding(name, "ok", detail))
    elif prlimit and os.geteuid() != 0 and not cli:
        detail = f"at most {settings.pids} per command (RLIMIT_NPROC in the box; {found.detail})"
        out.append(Finding(name, "ok", detail))
    else:
        why = "RLIMIT_NPROC counts the whole user" + (", and root is exempt" * (os.geteuid() == 0))
        detail = f"NOT bounded for {box}: {why}; no cgroup: {found.detail}"
        out.append(Finding(name, "warn", detail, fix))
    name = "box limit: memory"
    if not settings.memory_mb:
        out.append(Finding(name, "warn", "off (sandbox.limits.memory_mb: null)", "set a number"))
    elif found.way:
        detail = f"{settings.memory_mb} MB{memory_cli} for {box} ({found.detail})"
        out.append(Finding(name, "ok", detail))
    else:
        detail = f"{settings.memory_mb} MB per process only, not the tree's total: {found.detail}"
        out.append(Finding(name, "warn", detail, fix))
    name = "box limit: CPU time, file size"
    if prlimit is None:
        detail = "prlimit not found: no CPU-time, file-size or per-process memory limit"
        return [*out, Finding(name, "fail", detail, "apt-get install util-linux")]
    return [*out, _tried(name, settings)]


def _tried(name: str, settings: LimitSettings) -> Finding:
    cpu, size = settings.cpu_seconds, settings.file_size_mb
    try:
        with applied(settings, own_userns=False) as wrap:
            proc = wrap.popen(
                wrap.outer(wrap.inner(["true"])), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            _, err = proc.communicate(timeout=cgroups.PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding(name, "fail", f"a bounded command cannot start: {exc}", NO_CGROUP_FIX)
    if proc.returncode != 0:
        detail = f"a bounded `true` failed: {err.strip()[-200:] or proc.returncode}"
        return Finding(name, "fail", detail, "run `harness doctor` again; see the message")
    detail = f"{cpu or 'unlimited'} s CPU, {size or 'unlimited'} MB per file, per process"
    return Finding(name, "ok", f"{detail} (prlimit; a bounded command ran)")
