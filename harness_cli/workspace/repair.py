"""``admin: repair <case>``: a case.json that does not read, back from Slack (#34 item 3).

A torn write (a crash, a full disk, a hand edit) leaves a case's record unreadable; a sync
never commits such a file (:func:`gitsync.unstage_unparsable`), so the workspace's git history
holds its last good version. Before, the only way back was a git command in a shell. This
restores the newest committed version that is a valid case record, keeps the unreadable copy
outside the workspace (it is never committed), commits the restored file, and says what it
restored: from which commit, with which status, and what is lost since.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from harness_cli import clock, paths
from harness_cli.config import Thresholds
from harness_cli.errors import InputError, StateError
from harness_cli.logs import event
from harness_cli.services.git import Git
from harness_cli.state.locks import case_lock
from harness_cli.state.store import check_schema_version
from harness_cli.workspace import control, registry
from harness_cli.workspace.case import Case, validate_case_id
from harness_cli.workspace.gitsync import last_good, workspace_lock

log = logging.getLogger("harness.workspace.repair")

KEPT_DIR = "repaired"
"""Under ``$HARNESS_HOME``: the unreadable copies a repair replaced (outside the workspace, so
no sync ever pushes them)."""


@dataclass
class Repaired:
    case_id: str
    sha: str = ""
    """The commit whose version was restored ("" when nothing needed repair)."""
    status: str = ""
    kept: Path | None = None

    def reply(self) -> str:
        if not self.sha:
            return f"{self.case_id}: its case.json reads fine; nothing to repair"
        kept = f"; the unreadable copy is kept at {self.kept}" if self.kept else ""
        return (
            f"{self.case_id}: case.json restored from commit {self.sha[:12]} (its last version "
            f"that reads), status `{self.status}`{kept}. Whatever changed after that commit is "
            "not in it; messages that waited for the file are handled on the next cycle."
        )


def _valid(text: str) -> Case:
    """A version worth restoring: a case record this harness reads (ValueError otherwise)."""
    return Case.model_validate_json(text)


def repair_case(case_id: str, thresholds: Thresholds) -> Repaired:
    case_id = validate_case_id(case_id)
    path = registry.case_file(case_id)
    workspace = paths.workspace()
    rel = str(path.relative_to(workspace))
    registry.adopt_legacy()
    with case_lock(case_id), workspace_lock(paths.locks_dir()):
        try:
            raw: bytes | None = path.read_bytes()
        except FileNotFoundError:
            raw = None
        if raw is not None:
            # a file from a newer harness is not broken: restoring an old version would lose
            # what this harness cannot read (StateError, the file untouched)
            check_schema_version(path, raw, Case)
            try:
                _valid(raw.decode("utf-8"))
                return Repaired(case_id)
            except ValueError:  # UnicodeDecodeError included
                pass
        good = last_good(workspace, rel, accept=_valid)
        if good is None:
            if raw is None:
                raise InputError(
                    f"no case {case_id!r} in {paths.cases_root()}",
                    hint="see `admin: oncall status` or `harness case list`",
                )
            raise StateError(
                f"{path} is unreadable and no committed version of it reads",
                hint=f"its history: git -C {workspace} log -- {rel}",
            )
        text = Git(workspace).run_bytes("show", f"{good}:{rel}").decode("utf-8")
        kept = None
        if raw is not None:
            stamp = clock.now().strftime("%Y%m%dT%H%M%S")
            kept = paths.home() / KEPT_DIR / f"{case_id}-{stamp}-case.json"
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(raw)
        control.write_text(registry.case_dir(case_id), control.CASE_FILE, text)
        status = _valid(text).status
    event(log, "case_repaired", logging.WARNING, case_id=case_id, sha=good, kept=str(kept))
    registry.sync(
        f"case {case_id}: case.json restored from {good[:12]}",
        thresholds,
        only=[registry.case_dir(case_id)],
    )
    return Repaired(case_id, sha=good, status=status, kept=kept)
