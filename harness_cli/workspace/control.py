"""Control state: what the harness decided about a case, where no agent can write (#28 R4).

The case folder ``case-workspaces/<id>/`` is the investigator's writable root (it writes its
notes there), and the red team's investigator used it to set ``task_auto``, raise
``budget_usd`` and write ``acceptance/checks-approved.json`` "by" the operator. So every file
that holds a decision lives in ``control/<id>/`` instead, beside ``case-workspaces/`` in the
same git-synced workspace (both machines see it, and it merges by meaning like before):

- ``case.json`` — status and its history, ``task_auto``, ``plan_pending``, ``budget_usd``,
  the case's cost, its MRs (:mod:`harness_cli.workspace.registry`);
- ``acceptance/checks-approved.json`` — the operator's OK for a change to the required checks
  (:mod:`harness_cli.delivery.check_guard`);
- ``acceptance/latest.json`` and ``acceptance/<stamp>-<sha>.json`` — the acceptance records
  (:mod:`harness_cli.delivery.acceptance`).

No role's writable root includes ``control/``: the investigator and the pre-commitment write
their case folder only (the anthropic file tools refuse the rest, the claude CLI edits only its
working directory), the memory agents and reviewers write nothing, the code-changing agents
write their worktree inside the box. Only harness code writes here, under the case's lock.

The case folder keeps a copy of each file at the same relative path for humans and scripts
(CONTRACT §3 lists ``case.json`` and ``acceptance/`` there): a *mirror*, written after the
control file and never read by the harness. An agent that edits a mirror changes nothing;
:func:`refresh_mirrors` puts the harness's version back after each agent run.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
from contextlib import AbstractContextManager
from pathlib import Path

from harness_cli import paths
from harness_cli.logs import event
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace.gitsync import workspace_lock

log = logging.getLogger("harness.workspace.control")

CASE_FILE = "case.json"
MIRRORED = (CASE_FILE, "acceptance")
"""The names (a file, or a folder and everything in it) whose copies in the case folder are
mirrors of ``control/<id>/``: any other file there of those names is not the harness's."""
MIRROR_MODE = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
"""Read-only, as a hint to humans (root ignores it; the harness ignores the file)."""


def dir_for(case_dir: Path) -> Path:
    """The control folder of ``case_dir``: ``control/<rel>`` for ``case-workspaces/<rel>``
    (a sub-folder such as ``<id>/finalize`` keeps its own). A folder outside the workspace's
    cases (a test's scratch case) gets one named after its real path."""
    case_dir = Path(case_dir)
    cases = paths.cases_root()
    for root, folder in ((cases, case_dir), (_real(cases), _real(case_dir))):
        try:
            rel = folder.relative_to(root)
        except ValueError:
            continue
        if rel.parts and ".." not in rel.parts:
            return paths.control_root() / rel
    digest = hashlib.sha256(str(_real(case_dir)).encode()).hexdigest()[:16]
    return paths.control_root() / ".elsewhere" / f"{case_dir.name}-{digest}"


def case_dir_of(control: Path) -> Path:
    """The case folder whose control folder is ``control`` (the inverse of :func:`dir_for`)."""
    return paths.cases_root() / control.relative_to(paths.control_root())


def write_text(case_dir: Path, rel: str, text: str) -> Path:
    """Write the control file ``rel`` of ``case_dir`` atomically, then its mirror. Returns the
    control file's path."""
    target = dir_for(case_dir) / rel
    atomic_write_text(target, text)
    mirror(case_dir, rel, target.read_text(encoding="utf-8"))
    return target


def read_bytes(case_dir: Path, rel: str) -> bytes:
    """The control file ``rel`` of ``case_dir`` (FileNotFoundError when there is none); never
    the mirror in the case folder."""
    return (dir_for(case_dir) / rel).read_bytes()


def mirror(case_dir: Path, rel: str, text: str) -> bool:
    """Copy ``text`` to ``case_dir/rel`` for humans. Best effort: a mirror the agent broke (a
    file where a folder should be, a link) is logged and left, the control file stands."""
    target = Path(case_dir) / rel
    if not _plain_folders(Path(case_dir), target.parent):
        event(log, "mirror_skipped", logging.WARNING, path=str(target),
              why="a folder on the way is a link or a file")  # fmt: skip
        return False
    try:
        atomic_write_text(target, text)
        os.chmod(target, MIRROR_MODE)
    except OSError as exc:
        event(log, "mirror_skipped", logging.WARNING, path=str(target), why=str(exc))
        return False
    return True


def refresh_mirrors(case_dir: Path) -> list[str]:
    """Put the harness's version back over every mirror in ``case_dir`` that differs from its
    control file, and remove files under the mirrored names that have none (e.g. a
    ``checks-approved.json`` an agent wrote). Returns the mirror paths it fixed."""
    case_dir = Path(case_dir)
    control = dir_for(case_dir)
    if not control.is_dir():
        return []  # not a case the harness keeps records of
    fixed: list[str] = []
    wanted: dict[str, bytes] = {}
    for name in MIRRORED:
        for path in _files(control / name):
            wanted[path.relative_to(control).as_posix()] = path.read_bytes()
    for rel, data in wanted.items():
        target = case_dir / rel
        if _content(target) != data and mirror(case_dir, rel, data.decode("utf-8", "replace")):
            fixed.append(str(target))
    for name in MIRRORED:
        for path in _files(case_dir / name, links=True):
            if path.relative_to(case_dir).as_posix() not in wanted:
                path.unlink(missing_ok=True)
                fixed.append(str(path))
    if fixed:
        event(log, "mirrors_restored", logging.WARNING, case_dir=str(case_dir), paths=fixed)
    return fixed


def adopt_legacy() -> list[str]:
    """A workspace from before ``control/`` existed (#28 R4): each case folder's ``case.json``
    and ``acceptance/`` become the case's control files, once, when the workspace has no
    ``control/`` at all. From then on a case folder without a control record is not a case:
    an agent cannot create one by writing a ``case.json``. Returns the adopted case ids."""
    if paths.control_root().exists() or not paths.cases_root().is_dir():
        return []
    adopted: list[str] = []
    with _tree_lock():
        if paths.control_root().exists():
            return []
        staging = paths.workspace() / ".control-adopting"
        shutil.rmtree(staging, ignore_errors=True)
        for entry in sorted(os.scandir(paths.cases_root()), key=lambda e: e.name):
            source = Path(entry.path)
            if not entry.is_dir(follow_symlinks=False) or not _adoptable(source / CASE_FILE):
                continue
            for rel in _legacy_files(source):
                target = staging / entry.name / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / rel, target, follow_symlinks=False)
            adopted.append(entry.name)
        staging.mkdir(parents=True, exist_ok=True)
        os.replace(staging, paths.control_root())
    if adopted:
        event(log, "control_adopted", cases=len(adopted))
    return adopted


def _adoptable(path: Path) -> bool:
    try:
        return path.is_file() and not path.is_symlink()
    except OSError:
        return False


def _legacy_files(folder: Path) -> list[str]:
    found = [CASE_FILE]
    acceptance = folder / "acceptance"
    if acceptance.is_dir() and not acceptance.is_symlink():
        found += [
            p.relative_to(folder).as_posix()
            for p in sorted(acceptance.rglob("*"))
            if p.is_file() and not p.is_symlink()
        ]
    return found


def _tree_lock() -> AbstractContextManager[None]:
    return workspace_lock(paths.locks_dir())


def _files(path: Path, *, links: bool = False) -> list[Path]:
    """``path`` if it is a file, else every file under it (links never followed; listed only
    with ``links``)."""
    try:
        info = path.lstat()
    except OSError:
        return []
    if stat.S_ISLNK(info.st_mode):
        return [path] if links else []
    if not stat.S_ISDIR(info.st_mode):
        return [path]
    found: list[Path] = []
    for folder, dirs, names in os.walk(path):
        base = Path(folder)
        found += [base / n for n in names if links or not (base / n).is_symlink()]
        if links:
            found += [base / d for d in dirs if (base / d).is_symlink()]
    return sorted(found)


def _content(path: Path) -> bytes | None:
    try:
        if path.is_symlink():
            return None
        return path.read_bytes()
    except OSError:
        return None


def _plain_folders(top: Path, folder: Path) -> bool:
    """Every folder from ``top`` down to ``folder`` is a real folder or not there yet."""
    try:
        rel = folder.relative_to(top)
    except ValueError:
        return False
    current = top
    for part in ("", *rel.parts):
        current = current / part if part else current
        try:
            info = current.lstat()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            return False
    return True


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))
