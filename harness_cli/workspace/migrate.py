"""Move the workspace root and rewrite the absolute ``case_dir`` paths that point into it.

From the reference: "When the workspace root was renamed midway through the project, one
migration script handled it by rewriting the absolute paths in both maps while moving the
directory." Safe to re-run: a move already done only rewrites what still points at the old root.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from harness_cli.errors import InputError
from harness_cli.state import files
from harness_cli.state.locks import hold


@dataclass
class Migration:
    old: Path
    new: Path
    moved: bool = False
    rewritten: dict[str, int] = field(default_factory=dict)


def _rebase(path: str, old: Path, new: Path) -> str | None:
    """``path`` moved from under ``old`` to under ``new``; None if it was not under ``old``.
    The maps store resolved paths (symlinks followed) while the operator names the workspace
    as they reach it, so both spellings of ``old`` count."""
    p = Path(path)
    for root in dict.fromkeys((old, _resolved(old))):
        try:
            rel = p.relative_to(root)
        except ValueError:
            continue
        return str(new / rel)
    return None


def _resolved(path: Path) -> Path:
    """``path`` with its symlinks followed, also once the folder itself has moved away (its
    parent is resolved then)."""
    if path.exists():
        return path.resolve()
    return path.parent.resolve() / path.name


def migrate_workspace(old: Path, new: Path, *, dry_run: bool = False) -> Migration:
    old, new = old.expanduser().absolute(), new.expanduser().absolute()
    old_real = _resolved(old)
    result = Migration(old, new)
    if old == new:
        raise InputError(f"the workspace is already at {new}")
    if old.exists() and new.exists() and any(new.iterdir()):
        raise InputError(
            f"both {old} and {new} exist", hint="move or empty the target folder first"
        )
    if not old.exists() and not new.exists():
        raise InputError(f"workspace {old} not found", hint="check HARNESS_WORKSPACE")
    with hold("workspace-migrate", timeout=30, what="workspace migration"):
        if old.exists():
            result.moved = True
            if not dry_run:
                new.parent.mkdir(parents=True, exist_ok=True)
                if new.exists():
                    new.rmdir()
                shutil.move(str(old), str(new))
        for name, handle in (
            ("task-thread-map.json", files.task_thread_map()),
            ("oncall_thread_map.json", files.oncall_thread_map()),
        ):
            count = 0
            with handle.update() as tmap:
                for entry in tmap.threads.values():
                    moved = _rebase(entry.case_dir, old, new) or _rebase(
                        entry.case_dir, old_real, new
                    )
                    if moved is not None:
                        count += 1
                        if not dry_run:
                            entry.case_dir = moved
            result.rewritten[name] = count
        count = 0
        with files.monitored_mrs().update() as mrs:
            for mr in mrs.mrs.values():
                moved = _rebase(mr.case_dir, old, new) or _rebase(mr.case_dir, old_real, new)
                if moved is not None:
                    count += 1
                    if not dry_run:
                        mr.case_dir = moved
        result.rewritten["monitored-mrs.json"] = count
    return result
