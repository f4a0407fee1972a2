"""The box's own bounds (#28 R11): processes, memory, CPU time and file size of what an agent
runs — its commands, the checks that run its code, and on claude-code the CLI's whole tree.

Before, the box bounded what an agent could *see* and nothing of what it could *take*: a red
team started 405 processes and allocated 1.5 GB in it. Two mechanisms, each for what it does
well (harness.yaml ``sandbox.limits``):

- **a cgroup per command** (per claude CLI run), for the totals of the whole process tree:
  ``pids.max`` and the memory limit. Made directly in the cgroup filesystem where this user
  may (v1, or v2 from the root cgroup: a container's root), else by
  ``systemd-run --user --scope -p TasksMax= -p MemoryMax=`` where a user manager answers;
  probed once per process (:func:`plan`). The command enters it before it starts
  (:data:`ENTER`), so nothing it forks escapes; leftovers are killed and the cgroup removed.
- **rlimits** through ``prlimit`` (util-linux), per process and inherited: ``RLIMIT_CPU``
  (CPU seconds), ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_DATA`` (one process's heap — not
  ``RLIMIT_AS``, which breaks runtimes that reserve address space, node's among them), and
  ``RLIMIT_NPROC``. NPROC counts every process of the *user*, not of the box, so it is set only
  inside the harness's own bubblewrap box (a fresh user namespace, where it counts the box's
  processes alone) and never for root, whom the kernel exempts: there the cgroup's pids.max is
  the bound, and ``harness doctor`` says when no cgroup is to be had.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MB = 1 << 20
PROBE_TIMEOUT_S = 10.0
ENTER = 'while [ "$1" != -- ]; do echo 0 >"$1" || exit 125; shift; done; shift; exec "$@"'
"""``sh -c ENTER sh PROCS… -- ARGV``: the shell moves itself into each cgroup (writing 0 to a
``cgroup.procs`` moves the writer), then becomes ARGV, so ARGV's first instruction already runs
inside; 125 when a cgroup refused it (nothing of ARGV ran)."""
HIDE_BUS = ("env", "-u", "XDG_RUNTIME_DIR", "-u", "DBUS_SESSION_BUS_ADDRESS")
"""systemd-run needs the user bus; the command it starts must not get its address."""


class LimitSettings(BaseModel):
    """harness.yaml ``sandbox.limits:`` — the bounds of every agent command, every acceptance
    check and (claude-code) the CLI's whole process tree. ``null`` turns one off."""

    model_config = ConfigDict(extra="forbid")

    pids: int | None = Field(256, ge=16)
    """Processes and threads at once in one command's tree (a cgroup's pids.max; inside the
    harness's own box also RLIMIT_NPROC). A test suite with a few workers needs a few dozen."""
    memory_mb: int | None = Field(1024, ge=64)
    """Memory of one command's whole tree (the cgroup's limit, swap included) and of each
    process in it (RLIMIT_DATA). On claude-code the CLI's own share (:data:`CLI_SHARE_MB`)
    comes on top for its tree."""
    cpu_seconds: int | None = Field(600, ge=1)
    """CPU time of each process (RLIMIT_CPU); the wall clock is the tool's or check's timeout."""
    file_size_mb: int | None = Field(1024, ge=1)
    """The largest file a process may write (RLIMIT_FSIZE)."""
    cgroup: Literal["auto", "cgroupfs", "systemd", "off"] = "auto"
    """How the tree-wide bounds are applied: ``auto`` tries the cgroup filesystem, then
    ``systemd-run --user --scope``; ``off`` leaves the rlimits alone."""


CLI_SHARE_MB = 512
"""What the claude CLI itself (node, its sandbox's proxy) uses besides the agent's commands,
added to ``memory_mb`` for a CLI run's tree so the CLI is not what the limit kills."""
CLI_SHARE_PIDS = 64
"""The CLI's own threads and helpers, added to ``pids`` for its tree."""


# -- how this machine can apply them ----------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What :func:`plan` found: the cgroup way (``cgroupfs`` / ``systemd`` / ""), where, and
    why not when there is none; whether prlimit exists."""

    cgroup: str
    detail: str
    prlimit: str | None
    parents: dict[str, Path] = field(default_factory=dict)
    """cgroupfs: controller ("pids" / "memory") → the folder run cgroups are made in."""
    version: int = 0


_PLANS: dict[str, Plan] = {}
_SEQ = itertools.count()


def plan(settings: LimitSettings) -> Plan:
    """How the limits are applied here, probed once per process and way."""
    key = settings.cgroup
    if key not in _PLANS:
        _PLANS[key] = _plan(settings.cgroup)
    return _PLANS[key]


def _plan(how: str) -> Plan:
    prlimit = shutil.which("prlimit")
    if how == "off":
        return Plan("", "cgroup: off in harness.yaml", prlimit)
    problems: list[str] = []
    if how in ("auto", "cgroupfs"):
        found = _cgroupfs()
        if isinstance(found, Plan):
            found = Plan(found.cgroup, found.detail, prlimit, found.parents, found.version)
            problem = _probe(found)
            if problem is None:
                return found
            problems.append(f"cgroup filesystem: {problem}")
        else:
            problems.append(f"cgroup filesystem: {found}")
    if how in ("auto", "systemd"):
        problem = _probe_systemd()
        if problem is None:
            return Plan("systemd", "systemd-run --user --scope", prlimit)
        problems.append(f"systemd-run --user --scope: {problem}")
    return Plan("", "; ".join(problems), prlimit)


def _cgroupfs() -> Plan | str:
    """The folders this process could make its run cgroups in, or why there are none."""
    mounts: dict[str, tuple[Path, str]] = {}  # controller ("" for v2) → (mount point, root)
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8")
        own = Path("/proc/self/cgroup").read_text(encoding="utf-8")
    except OSError as exc:
        return f"cannot read /proc: {exc.strerror}"
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        parts, fs = left.split(), right.split()
        if len(parts) < 5 or len(fs) < 3:
            continue
        if fs[0] == "cgroup2":
            mounts.setdefault("", (Path(parts[4]), parts[3]))
        elif fs[0] == "cgroup":
            for option in fs[2].split(","):
                if option in ("pids", "memory"):
                    mounts.setdefault(option, (Path(parts[4]), parts[3]))
    where: dict[str, Path] = {}
    for line in own.splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            if name in mounts:
                point, root = mounts[name]
                inside = os.path.relpath(path, root) if path.startswith(root) else path
                where[name] = Path(os.path.normpath(point / inside.lstrip("/")))
    if "pids" in where and "memory" in where:
        return Plan("cgroupfs", "cgroup v1 (pids, memory)", None, {
            "pids": where["pids"], "memory": where["memory"]}, 1)  # fmt: skip
    if "" in where:
        point = mounts[""][0]
        available = _read(point / "cgroup.controllers").split()
        if not {"pids", "memory"} <= set(available):
            return "cgroup v2 without the pids and memory controllers"
        # v2 puts no process in a cgroup whose children have controllers, except the root:
        # from a container's root cgroup the runs go below it; elsewhere only systemd can.
        if where[""] != point:
            return f"cgroup v2 and this process is not in the root cgroup ({where['']})"
        return Plan("cgroupfs", "cgroup v2 (pids, memory)", None, {
            "pids": point, "memory": point}, 2)  # fmt: skip
    return "no pids and memory cgroup controllers mounted"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _probe(found: Plan) -> str | None:
    """Make a run cgroup with small limits, run ``true`` inside it, remove it."""
    try:
        with _cgroups(found, pids=16, memory_mb=64) as procs:
            proc = subprocess.run(
                ["/bin/sh", "-c", ENTER, "sh", *map(str, procs), "--", "true"],
                capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
            )  # fmt: skip
    except OSError as exc:
        return f"{exc.strerror or exc} ({getattr(exc, 'filename', '')})"
    except subprocess.TimeoutExpired:
        return "a probe did not finish"
    if proc.returncode != 0:
        return f"a process could not enter it: {proc.stderr.strip()[-200:] or proc.returncode}"
    return None


def _probe_systemd() -> str | None:
    exe = shutil.which("systemd-run")
    if exe is None:
        return "systemd-run is not installed"
    argv = [exe, "--user", "--scope", "--quiet", "--collect", "-p", "TasksMax=16", "true"]
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode != 0:
        return (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return None


# -- applying them ----------------------------------------------------------------------------


@dataclass
class Wrap:
    """The argv prefixes of one bounded run: ``outer`` goes around everything (the box, or the
    claude CLI), ``inner`` just before the command, inside the box."""

    outer_prefix: list[str] = field(default_factory=list)
    inner_prefix: list[str] = field(default_factory=list)
    outer_suffix: list[str] = field(default_factory=list)

    def outer(self, argv: Sequence[str]) -> list[str]:
        return [*self.outer_prefix, *self.outer_suffix, *argv]

    def inner(self, argv: Sequence[str]) -> list[str]:
        return [*self.inner_prefix, *argv]


@contextlib.contextmanager
def applied(settings: LimitSettings, *, own_userns: bool, cli: bool = False) -> Iterator[Wrap]:
    """The limits of one agent command (or, ``cli``, one claude CLI run and its tree): its own
    cgroup while it runs (anything left in it killed afterwards) and its rlimits.
    ``own_userns``: the command runs in a fresh user namespace (the harness's bwrap box), the
    one place RLIMIT_NPROC counts its processes alone."""
    found = plan(settings)
    pids = settings.pids + (CLI_SHARE_PIDS if cli else 0) if settings.pids else None
    memory = settings.memory_mb + (CLI_SHARE_MB if cli else 0) if settings.memory_mb else None
    wrap = Wrap(inner_prefix=rlimits(settings, found, nproc=own_userns and os.geteuid() != 0))
    if found.cgroup == "systemd" and (pids or memory):
        wrap.outer_prefix = ["systemd-run", "--user", "--scope", "--quiet", "--collect"]
        wrap.outer_prefix += [f"--property=TasksMax={pids}"] if pids else []
        wrap.outer_prefix += [f"--property=MemoryMax={memory}M"] if memory else []
        wrap.outer_prefix += ["--property=MemorySwapMax=0"] if memory else []
        wrap.outer_suffix = ["--", *HIDE_BUS]
        yield wrap
        return
    if found.cgroup != "cgroupfs" or not (pids or memory):
        yield wrap
        return
    with _cgroups(found, pids=pids, memory_mb=memory) as procs:
        wrap.outer_prefix = ["/bin/sh", "-c", ENTER, "sh", *map(str, procs)]
        wrap.outer_suffix = ["--"]
        yield wrap


def rlimits(settings: LimitSettings, found: Plan, *, nproc: bool) -> list[str]:
    """``prlimit --cpu=… --fsize=… --data=… [--nproc=…] --`` (soft = hard: the command cannot
    raise them); empty without prlimit (doctor says so)."""
    if found.prlimit is None:
        return []
    args = [f"--cpu={settings.cpu_seconds}"] if settings.cpu_seconds else []
    args += [f"--fsize={settings.file_size_mb * MB}"] if settings.file_size_mb else []
    args += [f"--data={settings.memory_mb * MB}"] if settings.memory_mb else []
    args += [f"--nproc={settings.pids}"] if nproc and settings.pids else []
    return [found.prlimit, *args, "--"] if args else []


@contextlib.contextmanager
def _cgroups(found: Plan, *, pids: int | None, memory_mb: int | None) -> Iterator[list[Path]]:
    """A cgroup per controller under ``found.parents`` with the limits written; yields their
    ``cgroup.procs``. Afterwards whatever is still in them is killed. An emptied cgroup is kept
    for this process's next command (making one per command cost more than the command);
    this process's cgroups go when it exits, a killed harness's at the next one's start."""
    folders = _IDLE.pop() if _IDLE else _make(found)
    try:
        for folder in folders:
            _limit(folder, found.version, pids=pids, memory_mb=memory_mb)
        yield [folder / "cgroup.procs" for folder in folders]
    finally:
        if all(_emptied(folder) for folder in folders):
            _IDLE.append(folders)
        else:
            _BUSY.extend(folders)


_IDLE: list[list[Path]] = []
"""Run cgroups of this process, empty, ready for its next command."""
_BUSY: list[Path] = []
"""Run cgroups whose processes were killed but had not gone yet; removed at exit."""


def _make(found: Plan) -> list[Path]:
    if not _IDLE and not _BUSY:
        atexit.register(_remove_all)
    name = f"harness-{os.getpid()}-{next(_SEQ)}"
    made: list[Path] = []
    for controller in ("pids", "memory"):
        parent = found.parents[controller]
        folder = parent / name
        if folder in made:
            continue
        _sweep(parent)
        folder.mkdir()
        made.append(folder)
        if found.version == 2:
            _enable(parent)
    return made


def _enable(parent: Path) -> None:
    control = parent / "cgroup.subtree_control"
    if not {"pids", "memory"} <= set(_read(control).split()):
        control.write_text("+pids +memory", encoding="ascii")


def _limit(folder: Path, version: int, *, pids: int | None, memory_mb: int | None) -> None:
    """Write the limits (``max`` for one that is off: a reused cgroup may hold another's)."""
    if (folder / "pids.max").exists():
        (folder / "pids.max").write_text(str(pids or "max"), encoding="ascii")
    if version == 2:
        for file, value in (("memory.max", memory_mb * MB if memory_mb else "max"),
                            ("memory.swap.max", 0 if memory_mb else "max")):  # fmt: skip
            if (folder / file).exists():
                (folder / file).write_text(str(value), encoding="ascii")
        return
    size = str(memory_mb * MB if memory_mb else -1)
    files = [f for f in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
             if (folder / f).exists()]  # fmt: skip
    try:  # v1 wants memory <= memory+swap at every step: lowering goes memory first
        for file in files:
            (folder / file).write_text(size, encoding="ascii")
    except OSError:
        for file in reversed(files):
            (folder / file).write_text(size, encoding="ascii")


def _emptied(folder: Path) -> bool:
    """Kill what is left in ``folder`` (a command that forked into the background); True when
    nothing is."""
    left = _read(folder / "cgroup.procs").split()
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    return not left


def _remove_all() -> None:
    folders = [f for group in _IDLE for f in group] + _BUSY
    deadline = time.monotonic() + 2.0
    while folders and time.monotonic() < deadline:
        folders = [f for f in folders if not _removed(f)]
        if folders:
            time.sleep(0.02)


def _removed(folder: Path) -> bool:
    _emptied(folder)
    try:
        folder.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False  # a killed process still on its way out: EBUSY for a moment
    return True


def _sweep(parent: Path) -> None:
    """Run cgroups a killed harness left behind (its pid is in the name)."""
    for folder in parent.glob("harness-*-*"):
        pid = folder.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _removed(folder)
