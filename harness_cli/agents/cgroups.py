"""The cgroup of one agent command (or one claude CLI run), for the totals of its whole process
tree: ``pids.max`` and the memory limit (#28 R11; the rlimits are :mod:`limits`'s).

Made directly in the cgroup filesystem where this user may (v1, or v2 from the root cgroup: a
container's root), else by ``systemd-run --user --scope -p TasksMax= -p MemoryMax=`` where a
user manager answers; which one is probed once per process (:func:`plan`). The command is in
its cgroup before its first instruction, so nothing it forks escapes; whatever is left in it
afterwards is killed. An emptied cgroup serves this process's next command (one per command
cost more than the command); they go when the process exits, a killed harness's at the next
one's start.

How the command gets in matters for its cost. Moving a process between cgroups takes the
kernel's cgroup_threadgroup_rwsem for writing, which waits out an RCU grace period whenever no
other move happened in the last one: ~12 ms idle, more under load, on every command — most of
what the limits cost (bench/bench_limits.py). On cgroup v1 a single *thread* may be moved, and
a process forked by a thread is born in that thread's cgroups: so each run cgroup of this
process has a spawner thread that moved in once, when the cgroup was made, and starts every
command of that cgroup (:class:`_Spawner`): no move per command. On v2 (threads stay with their
process) and through systemd the command moves itself in on its way (:data:`ENTER`).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


Spawn = Callable[..., "subprocess.Popen[Any]"]
"""``subprocess.Popen``'s signature: how a bounded command is started."""


@dataclass(frozen=True)
class Entry:
    """How one command gets into its cgroup: ``prefix`` goes in front of its argv (the outermost
    wrapper) and ``spawn`` starts it (``subprocess.Popen``, or a spawner thread's)."""

    prefix: list[str] = field(default_factory=list)
    spawn: Spawn = subprocess.Popen


@contextlib.contextmanager
def entered(found: Plan, *, pids: int | None, memory_mb: int | None) -> Iterator[Entry]:
    """How to run a command in a cgroup of its own with these limits (a plain Popen: no cgroup
    here, or no limit asked); the cgroup lives until the block ends."""
    if not (pids or memory_mb) or not found.way:
        yield Entry()
    elif found.way == "systemd":
        argv = ["systemd-run", "--user", "--scope", "--quiet", "--collect"]
        argv += [f"--property=TasksMax={pids}"] if pids else []
        argv += [f"--property=MemoryMax={memory_mb}M", "--property=MemorySwapMax=0"] * bool(
            memory_mb
        )
        yield Entry([*argv, "--", *HIDE_BUS])
    else:
        with _cgroups(found, pids=pids, memory_mb=memory_mb) as run:
            if run.spawner is not None:
                yield Entry(spawn=run.spawner.popen)
            else:
                yield Entry(["/bin/sh", "-c", ENTER, "sh", *map(str, run.procs), "--"])


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
        with entered(found, pids=16, memory_mb=64) as entry:
            proc = entry.spawn(
                [*entry.prefix, "cat", "/proc/self/cgroup"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            out, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
    except OSError as exc:
        return f"{exc.strerror or exc} ({getattr(exc, 'filename', '')})"
    except subprocess.TimeoutExpired:
        return "a probe did not finish"
    if proc.returncode != 0:
        return f"a process could not enter it: {err.strip()[-200:] or proc.returncode}"
    if f"/harness-{os.getpid()}-" not in out:
        return f"a process started in it was not in it: {out.strip()[-200:]}"
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


@dataclass
class _Run:
    """One run cgroup of this process (a folder per controller) and, on v1, its spawner."""

    folders: list[Path]
    spawner: _Spawner | None = None

    @property
    def procs(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.folders]


@contextlib.contextmanager
def _cgroups(found: Plan, *, pids: int | None, memory_mb: int | None) -> Iterator[_Run]:
    """A cgroup per controller under ``found.parents`` with the limits written. Afterwards
    whatever is still in them is killed. An emptied cgroup is kept for this process's next
    command (making one per command cost more than the command); this process's cgroups go
    when it exits, a killed harness's at the next one's start."""
    run = _IDLE.pop() if _IDLE else _make(found)
    # The spawner thread is one of the cgroup's tasks: pids.max counts it, so one more.
    allowed = pids + 1 if pids and run.spawner is not None else pids
    try:
        for folder in run.folders:
            if _WRITTEN.get(folder) != (allowed, memory_mb):  # a reused cgroup keeps its limits
                _WRITTEN.pop(folder, None)
                _limit(folder, found.version, pids=allowed, memory_mb=memory_mb)
                _WRITTEN[folder] = (allowed, memory_mb)
        yield run
    finally:
        for folder in run.folders:
            _emptied(folder)
        # Killed leftovers (and a finished box's pid namespace, which the kernel tears down a
        # moment after its init is reaped) leave by themselves: the cgroup is ready to reuse.
        _IDLE.append(run)


_IDLE: list[_Run] = []
"""Run cgroups of this process, empty, ready for its next command."""
_SEEN: list[_Run] = []
"""Every run cgroup this process made (in use or idle): removed when it exits."""
_WRITTEN: dict[Path, tuple[int | None, int | None]] = {}
"""The limits last written into each of this process's run cgroups."""


def _forget() -> None:
    """In a forked child: the spawner threads did not come along, nor do the cgroups."""
    _IDLE.clear()
    _SEEN.clear()
    _WRITTEN.clear()


os.register_at_fork(after_in_child=_forget)


class _Spawner:
    """A thread of this process that lives in one run cgroup (v1 only: there a thread can be
    moved alone) and starts that cgroup's commands: a child is born in the cgroups of the
    thread that forked it, so no command has to move (see the module's docstring).

    The thread itself runs no agent code and allocates next to nothing there; the OOM killer
    and ``cgroup.procs``' readers that kill leftovers pass over it (:func:`_emptied` skips this
    process). It lives as long as the cgroup — a command's parent-death signal
    (``--die-with-parent``, ``setpriv --pdeathsig``) follows the thread that forked it."""

    def __init__(self, folders: list[Path]) -> None:
        self._jobs: queue.Queue[tuple[tuple[Any, ...], dict[str, Any]] | None] = queue.Queue()
        self._done: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue()
        self._thread = threading.Thread(
            target=self._serve, args=(folders,), name="harness-cgroup-spawner", daemon=True
        )
        self._thread.start()
        _, problem = self._done.get()
        if problem is not None:
            self._thread.join()
            raise problem

    def _serve(self, folders: list[Path]) -> None:
        try:
            for folder in folders:  # v1's `tasks` takes one thread (cgroup.procs: the process)
                (folder / "tasks").write_text(str(threading.get_native_id()), encoding="ascii")
        except OSError as exc:
            self._done.put((None, exc))
            return
        self._done.put((True, None))
        while (job := self._jobs.get()) is not None:
            args, kwargs = job
            try:
                self._done.put((subprocess.Popen(*args, **kwargs), None))
            except Exception as exc:  # noqa: BLE001 - the caller's to handle, as from Popen
                self._done.put((None, exc))

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[Any]:
        """``subprocess.Popen(*args, **kwargs)``, forked by the thread in the cgroup."""
        self._jobs.put((args, kwargs))
        proc, problem = self._done.get()
        if problem is not None:
            raise problem
        return proc  # type: ignore[no-any-return]

    def stop(self) -> None:
        """End the thread (it leaves the cgroup as it ends: the folder can then be removed)."""
        self._jobs.put(None)
        self._thread.join(timeout=PROBE_TIMEOUT_S)


def _make(found: Plan) -> _Run:
    if not _SEEN:
        atexit.register(_remove_all)
    name = f"harness-{os.getpid()}-{next(_SEQ)}"
    run = _Run([])
    _SEEN.append(run)
    for controller in ("pids", "memory"):
        parent = found.parents[controller]
        folder = parent / name
        if folder in run.folders:
            continue
        _sweep(parent)
        folder.mkdir()
        run.folders.append(folder)
        if found.version == 2:
            _enable(parent)
    if found.version == 1:
        run.spawner = _Spawner(run.folders)
    return run


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
    # This process is listed when its spawner thread is inside: never its own leftover.
    left = [pid for pid in _read(folder / "cgroup.procs").split() if int(pid) != os.getpid()]
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
    for run in _SEEN:
        if run.spawner is not None:
            run.spawner.stop()
    folders = [f for run in _SEEN for f in run.folders]
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
