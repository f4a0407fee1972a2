"""The cgroup of one agent command (or one claude CLI run), for the totals of its whole process
tree: ``pids.max`` and the memory limit (#28 R11; the rlimits are :mod:`limits`'s).

Made directly in the cgroup filesystem where this user may (v1, or v2 from the root cgroup: a
container's root), else by ``systemd-run --user --scope -p TasksMax= -p MemoryMax=`` where a
user manager answers; which one is probed once per process (:func:`plan`). The command enters
its cgroup before it starts (:data:`ENTER`), so nothing it forks escapes; whatever is left in
it afterwards is killed. An emptied cgroup serves this process's next command (one per command
cost more than the command); they go when the process exits, a killed harness's at the next
one's start.
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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MB = 1 << 20
PROBE_TIMEOUT_S = 10.0
ENTER = 'while [ "$1" != -- ]; do echo 0 >"$1" || exit 125; shift; done; shift; exec "$@"'
"""``sh -c ENTER sh PROCS… -- ARGV``: the shell moves itself into each cgroup (writing 0 to a
``cgroup.procs`` moves the writer), then becomes ARGV, so ARGV's first instruction already runs
inside; 125 when a cgroup refused it (nothing of ARGV ran)."""
HIDE_BUS = ("env", "-u", "XDG_RUNTIME_DIR", "-u", "DBUS_SESSION_BUS_ADDRESS")
"""systemd-run needs the user bus; the command it starts must not get its address."""


# -- how this machine can make one ------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What :func:`plan` found: the way (``cgroupfs`` / ``systemd`` / "": none) and where, or
    why there is none."""

    way: str
    detail: str
    parents: dict[str, Path] = field(default_factory=dict)
    """cgroupfs: controller ("pids" / "memory") → the folder run cgroups are made in."""
    version: int = 0


_PLANS: dict[str, Plan] = {}
_SEQ = itertools.count()


def plan(how: str) -> Plan:
    """How a command's cgroup is made here (``how``: harness.yaml's ``sandbox.limits.cgroup``),
    probed once per process."""
    if how not in _PLANS:
        _PLANS[how] = _plan(how)
    return _PLANS[how]


def _plan(how: str) -> Plan:
    if how == "off":
        return Plan("", "sandbox.limits.cgroup is off")
    problems: list[str] = []
    if how in ("auto", "cgroupfs"):
        found = _cgroupfs()
        problem = found if isinstance(found, str) else _probe(found)
        if problem is None and isinstance(found, Plan):
            return found
        problems.append(f"cgroup filesystem: {problem}")
    if how in ("auto", "systemd"):
        problem = _probe_systemd()
        if problem is None:
            return Plan("systemd", "systemd-run --user --scope")
        problems.append(f"systemd-run --user --scope: {problem}")
    return Plan("", "; ".join(problems))


@contextlib.contextmanager
def entered(found: Plan, *, pids: int | None, memory_mb: int | None) -> Iterator[list[str]]:
    """The argv prefix that runs a command in a cgroup of its own with these limits (empty:
    no cgroup here, or no limit asked); the cgroup lives until the block ends."""
    if not (pids or memory_mb) or not found.way:
        yield []
    elif found.way == "systemd":
        argv = ["systemd-run", "--user", "--scope", "--quiet", "--collect"]
        argv += [f"--property=TasksMax={pids}"] if pids else []
        argv += [f"--property=MemoryMax={memory_mb}M", "--property=MemorySwapMax=0"] * bool(
            memory_mb
        )
        yield [*argv, "--", *HIDE_BUS]
    else:
        with _cgroups(found, pids=pids, memory_mb=memory_mb) as procs:
            yield ["/bin/sh", "-c", ENTER, "sh", *map(str, procs), "--"]


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
        found = {"pids": where["pids"], "memory": where["memory"]}
        return Plan("cgroupfs", "cgroup v1 (pids, memory)", found, 1)
    if "" in where:
        point = mounts[""][0]
        available = _read(point / "cgroup.controllers").split()
        if not {"pids", "memory"} <= set(available):
            return "cgroup v2 without the pids and memory controllers"
        # v2 puts no process in a cgroup whose children have controllers, except the root:
        # from a container's root cgroup the runs go below it; elsewhere only systemd can.
        if where[""] != point:
            return f"cgroup v2 and this process is not in the root cgroup ({where['']})"
        return Plan("cgroupfs", "cgroup v2 (pids, memory)", {"pids": point, "memory": point}, 2)
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


# -- making one ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _cgroups(found: Plan, *, pids: int | None, memory_mb: int | None) -> Iterator[list[Path]]:
    """A cgroup per controller under ``found.parents`` with the limits written; yields their
    ``cgroup.procs``. Afterwards whatever is still in them is killed. An emptied cgroup is kept
    for this process's next command (making one per command cost more than the command);
    this process's cgroups go when it exits, a killed harness's at the next one's start."""
    folders = _IDLE.pop() if _IDLE else _make(found)
    try:
        for folder in folders:
            if _WRITTEN.get(folder) != (pids, memory_mb):  # a reused cgroup keeps its limits
                _WRITTEN.pop(folder, None)
                _limit(folder, found.version, pids=pids, memory_mb=memory_mb)
                _WRITTEN[folder] = (pids, memory_mb)
        yield [folder / "cgroup.procs" for folder in folders]
    finally:
        for folder in folders:
            _emptied(folder)
        # Killed leftovers (and a finished box's pid namespace, which the kernel tears down a
        # moment after its init is reaped) leave by themselves: the cgroup is ready to reuse.
        _IDLE.append(folders)


_IDLE: list[list[Path]] = []
"""Run cgroups of this process, empty, ready for its next command."""
_SEEN: list[list[Path]] = []
"""Every run cgroup this process made (in use or idle): removed when it exits."""
_WRITTEN: dict[Path, tuple[int | None, int | None]] = {}
"""The limits last written into each of this process's run cgroups."""


def _make(found: Plan) -> list[Path]:
    if not _SEEN:
        atexit.register(_remove_all)
    name = f"harness-{os.getpid()}-{next(_SEQ)}"
    made: list[Path] = []
    _SEEN.append(made)
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
    if left and (folder / "cgroup.kill").exists():  # v2: the kernel kills the whole cgroup
        with contextlib.suppress(OSError):
            (folder / "cgroup.kill").write_text("1", encoding="ascii")
        return False
    for pid in left:
        _kill_if_inside(int(pid), folder)
    return not left


def _kill_if_inside(pid: int, folder: Path) -> None:
    """SIGKILL ``pid`` only if it is still in ``folder``: through a pidfd, so a pid that ended
    and was reused by someone else's process meanwhile is never hit."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return  # gone already
    try:
        paths = [line.rpartition(":")[2] for line in _read(Path(f"/proc/{pid}/cgroup")).split()]
        if any(p.endswith(f"/{folder.name}") for p in paths):
            signal.pidfd_send_signal(handle, signal.SIGKILL)
    except OSError:
        pass  # ended between the look and the kill
    finally:
        os.close(handle)


def _remove_all() -> None:
    folders = [f for group in _SEEN for f in group]
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
