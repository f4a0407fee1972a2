"""After a run, put back what the agent changed where it had no business writing.

The anthropic runtime refuses such writes before they happen, but Bash (in either runtime)
and the claude CLI's own Write reach the disk unchecked. So every run is bracketed:
``snapshot()`` before, ``revert_outside()`` after. The snapshot holds each file's stat and its
bytes (within a budget), so a change is undone from the snapshot itself, with no reliance on
git being clean.

Covered: the ``protect`` trees (minus the allowed root and every ``.git`` folder — a
worktree's commits land in the main repo's ``.git``, and undoing them would lose work), and
``message.json`` at the top of the allowed root and the workdir: the originating message is
evidence (the case registry creates it 0444, which does not stop root).

Runs overlap: workflows of other cases run at the same time in the same ``$HARNESS_HOME``, and
their harness writes into a tree this run guards (the pre-commitment records). Such a write
goes through :func:`harness_write`: under a lock every revert takes, with the digest of what
was written noted in ``guards/written/``; a revert leaves a file whose bytes are the ones the
harness last noted for it. Before, one run's revert deleted the record another had just made.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import hashlib
import logging
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness_cli import paths
from harness_cli.logs import event
from harness_cli.services.runtime import RunRequest, RunResult
from harness_cli.state.store import atomic_write_bytes

log = logging.getLogger("harness.agents.guard")

PINNED_NAMES = ("message.json",)
"""Files at the top of the case dir that no run may change."""
SKIP_DIRS = frozenset({".git"})
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_TOTAL_BYTES = 128 * 1024 * 1024
"""Bytes kept per snapshot; a change to a file past the budget is reported, not undone."""


@dataclass(frozen=True)
class _Entry:
    mode: int
    size: int
    mtime_ns: int
    data: bytes | None = None
    link: str | None = None


@dataclass
class Snapshot:
    allowed_root: Path
    roots: tuple[Path, ...]
    files: dict[Path, _Entry] = field(default_factory=dict)
    dirs: set[Path] = field(default_factory=set)
    pinned: dict[Path, _Entry] = field(default_factory=dict)
    budget: int = MAX_TOTAL_BYTES


def guarded(req: RunRequest, body: Callable[[], RunResult]) -> RunResult:
    """Run ``body`` between a snapshot and a revert; the revert happens even if it raises.
    The snapshot is also kept on disk (:mod:`guard_store`) until the revert is done: a run
    killed before it (SIGKILL, OOM, a reboot) is reverted by the next run's
    :func:`repair_left_behind`."""
    # the store imports the guard's rules: a two-module pair
    from harness_cli.agents import guard_store  # noqa: PLC0415

    snap = snapshot(req.protect, req.allowed_root, req.workdir)
    kept = guard_store.keep(snap)
    token = _kept.set(kept)
    try:
        result = body()
    finally:
        _kept.reset(token)
        reverted = revert_outside(req.allowed_root, snap)
        guard_store.discard(kept)
    result.reverted = reverted
    return result


_kept: contextvars.ContextVar[Path | None] = contextvars.ContextVar("guard_kept", default=None)


def record_process(pid: int, started: str) -> None:
    """The agent's process group, for the next run to kill if this one dies with it alive."""
    # the store imports the guard's rules: a two-module pair
    from harness_cli.agents import guard_store  # noqa: PLC0415

    kept = _kept.get()
    if kept is not None:
        guard_store.note_process(kept, pid, started)


def repair_left_behind(case_id: str = "") -> list[str]:
    """Revert what agents of dead runs changed where they must not (their snapshots are still
    on disk), after killing whatever is left of their processes. Returns what was put back."""
    # the store imports the guard's rules: a two-module pair
    from harness_cli.agents import guard_store  # noqa: PLC0415

    return guard_store.repair(case_id)


def pinned_paths(allowed_root: Path, workdir: Path) -> list[Path]:
    tops = dict.fromkeys([allowed_root.resolve(), workdir.resolve()])
    return [top / name for top in tops for name in PINNED_NAMES]


def is_pinned(path: Path, allowed_root: Path, workdir: Path) -> bool:
    """Whether ``path`` (already resolved) is a file no run may write."""
    return path in pinned_paths(allowed_root, workdir)


def snapshot(protect: Iterable[Path], allowed_root: Path, workdir: Path) -> Snapshot:
    allowed = allowed_root.resolve()
    # A tree inside the allowed root is the agent's to change: nothing to guard there.
    roots = tuple(
        dict.fromkeys(
            r for r in (p.resolve() for p in protect if p.exists()) if not r.is_relative_to(allowed)
        )
    )
    snap = Snapshot(allowed_root=allowed, roots=roots)
    for root in roots:
        for path, is_dir in _walk(root, allowed):
            if is_dir:
                snap.dirs.add(path)
            else:
                snap.files[path] = _capture(path, snap)
    for path in pinned_paths(allowed, workdir):
        if path.is_file() and not path.is_symlink():
            snap.pinned[path] = _capture(path, snap, force=True)
    return snap


def harness_write(path: Path, write: Callable[[], None]) -> None:
    """``write()`` writes ``path``, a file in a tree that concurrent runs guard: done under the
    lock their reverts take, and noted, so that none of them undoes it (module docstring)."""
    with _writes_locked():
        write()
        note = _note_of(path)
        note.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(note, _digest(path).encode("ascii"), verbatim=True)


@contextlib.contextmanager
def _writes_locked() -> Iterator[None]:
    folder = paths.home() / "guards"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "writes.lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # (closing the file releases the lock)


def _note_of(path: Path) -> Path:
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:40]
    return paths.home() / "guards" / "written" / name


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _harness_made(path: Path) -> bool:
    """``path`` holds what the harness last wrote there through :func:`harness_write`."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        noted = _note_of(path).read_text(encoding="ascii")
    except OSError:
        return False
    return noted == _digest(path)


def revert_outside(allowed_root: Path, snap: Snapshot) -> list[str]:
    """Undo every change in the snapshot's trees outside ``allowed_root`` and to the pinned
    files; return what was put back (``… (not restored: …)`` when that was impossible).
    A file the harness itself wrote meanwhile (another run's, :func:`harness_write`) stays."""
    with _writes_locked():
        return _revert_outside(allowed_root, snap)


def _revert_outside(allowed_root: Path, snap: Snapshot) -> list[str]:
    allowed = allowed_root.resolve()
    reverted: list[str] = []
    for root in snap.roots:
        reverted += _revert_tree(root, allowed, snap)
    for path, entry in snap.pinned.items():
        if not _same(path, entry):
            reverted.append(_restore(path, entry))
    if reverted:
        event(log, "guard_reverted", logging.WARNING, paths=reverted)
    return reverted


def _revert_tree(root: Path, allowed: Path, snap: Snapshot) -> list[str]:
    reverted: list[str] = []
    known_dirs = snap.dirs | {root}
    new_dirs: list[Path] = []
    for path, is_dir in _walk(root, allowed):
        if any(path.is_relative_to(d) for d in new_dirs):
            continue  # inside a new folder: goes with it
        if is_dir:
            if path not in known_dirs:
                new_dirs.append(path)
            continue
        old = snap.files.get(path)
        if old is not None and _same(path, old):
            continue
        if _harness_made(path):
            continue  # a concurrent run's harness wrote it (module docstring)
        if old is None:
            _remove(path)
            reverted.append(str(path))
        else:
            reverted.append(_restore(path, old))
    for directory in new_dirs:
        shutil.rmtree(directory, ignore_errors=True)
        reverted.append(f"{directory}/")
    # Deleted (or replaced by a folder, now removed): bring back from the snapshot.
    for path, old in snap.files.items():
        if path.is_relative_to(root) and not _lexists(path):
            reverted.append(_restore(path, old))
    for directory in sorted(snap.dirs):
        if directory.is_relative_to(root) and not _lexists(directory):
            directory.mkdir(parents=True, exist_ok=True)
            reverted.append(f"{directory}/")
    return reverted


def _walk(root: Path, allowed: Path) -> Iterator[tuple[Path, bool]]:
    """Every file, symlink and folder under ``root``, outside ``allowed`` and ``.git``."""
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if path == allowed or entry.name in SKIP_DIRS:
                continue
            if entry.is_dir(follow_symlinks=False):
                yield path, True
                stack.append(path)
            else:
                yield path, False


def _capture(path: Path, snap: Snapshot, *, force: bool = False) -> _Entry:
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        return _Entry(st.st_mode, st.st_size, st.st_mtime_ns, link=os.readlink(path))
    data = None
    if stat.S_ISREG(st.st_mode) and (
        force or (st.st_size <= MAX_FILE_BYTES and st.st_size <= snap.budget)
    ):
        try:
            data = path.read_bytes()
            snap.budget -= len(data)
        except OSError:
            data = None
    return _Entry(st.st_mode, st.st_size, st.st_mtime_ns, data=data)


def _same(path: Path, old: _Entry) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    if st.st_mode != old.mode:
        return False
    if old.link is not None:
        return os.readlink(path) == old.link
    if (st.st_size, st.st_mtime_ns) == (old.size, old.mtime_ns):
        return True
    # Touched: only a content change counts.
    if old.data is None or st.st_size != old.size:
        return False
    try:
        return path.read_bytes() == old.data
    except OSError:
        return False


def _restore(path: Path, old: _Entry) -> str:
    if old.link is None and old.data is None:
        return f"{path} (not restored: too large to snapshot)"
    _remove(path)
    if old.link is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(old.link, path)
        return str(path)
    assert old.data is not None
    atomic_write_bytes(path, old.data, verbatim=True)  # put back exactly as it was
    os.chmod(path, stat.S_IMODE(old.mode))
    os.utime(path, ns=(old.mtime_ns, old.mtime_ns))
    return str(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif _lexists(path):
        path.unlink()


def _lexists(path: Path) -> bool:
    return os.path.lexists(path)
