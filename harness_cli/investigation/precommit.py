"""The pre-commitment lock: before iteration one the model commits a hypothesis slate (at
least six candidates, four or five criteria), locked into ``kickoff_precommitment.json``,
"which nothing may change afterwards".

"An unconstrained LLM reasoning loop tends to settle on whatever its first evidence favors
[...] The lock can't stop that pull. What it does is force every investigation to begin from
the whole hypothesis space."

The case folder is the investigator's to write, so the file there cannot hold the lock by
itself: a digest beside the slate can be recomputed by whoever rewrites the slate. The lock's
truth lives where the agent cannot write: a record in ``$HARNESS_HOME/precommit/<case>.json``
(the slate, its digest, the workspace commit that created the file) and that commit itself,
which a second machine finds in the workspace's history. ``enforce`` compares the file with
that record after every model call; a changed slate is put back, the run gets a guard note,
and the reviewers are handed the recorded slate, never the file.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import clock, paths
from harness_cli.agents import guard
from harness_cli.errors import HarnessError
from harness_cli.logs import event
from harness_cli.loop.jsonblocks import json_objects
from harness_cli.services.git import Git
from harness_cli.state.store import atomic_write_json, atomic_write_text

log = logging.getLogger("harness.precommit")

FILE = "kickoff_precommitment.json"
MIN_CANDIDATES = 6
CRITERIA = (4, 5)
MAX_ATTEMPTS = 3
"""A short slate is sent back; after this many tries the investigation starts with what it has
and the shortfall becomes a guard note."""

Committer = Callable[[Path], str | None]
"""Commits one file of the workspace; returns the commit (None: not committed, e.g. dry run)."""


class Slate(BaseModel):
    hypothesis_slate: list[dict[str, Any]] = Field(default_factory=list)
    selection_criteria: list[str] = Field(default_factory=list)

    def problems(self) -> list[str]:
        out = []
        if len(self.hypothesis_slate) < MIN_CANDIDATES:
            out.append(
                f"the slate has {len(self.hypothesis_slate)} candidates; at least "
                f"{MIN_CANDIDATES} are required"
            )
        if not CRITERIA[0] <= len(self.selection_criteria) <= CRITERIA[1]:
            out.append(
                f"{len(self.selection_criteria)} selection criteria; give "
                f"{CRITERIA[0]}-{CRITERIA[1]}"
            )
        return out


class LockRecord(BaseModel):
    """``$HARNESS_HOME/precommit/<case_id>.json``: the lock as the harness made it."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    case_id: str
    """The case whose slate this is."""
    digest: str
    """sha256 of the canonical slate JSON."""
    locked_at: datetime
    """When the slate was locked (as written into the case file)."""
    slate: Slate
    """The slate itself, so a changed file can be put back from here."""
    commit: str | None = None
    """The workspace commit that created the case file (None: not committed, e.g. a dry run)."""

    def file_data(self) -> dict[str, Any]:
        """The case file's content, exactly as locked."""
        return {"locked_at": self.locked_at.isoformat(), "digest": self.digest,
                **self.slate.model_dump()}  # fmt: skip


def digest(slate: Slate) -> str:
    canonical = json.dumps(slate.model_dump(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def records_dir() -> Path:
    return paths.precommit_dir()


def record_path(case_id: str) -> Path:
    return records_dir() / f"{case_id}.json"


def parse_slate(text: str) -> Slate | None:
    for block in reversed(json_objects(text)):
        try:
            slate = Slate.model_validate(block)
        except ValidationError:
            continue
        if slate.hypothesis_slate or slate.selection_criteria:
            return slate
    return None


def commit(
    case_dir: Path,
    ask: Callable[[str], str],
    first_prompt: str,
    *,
    committer: Committer | None = None,
) -> tuple[Slate, list[str]]:
    """Ask for the slate until it is complete (bounded); lock it: the case file, the record
    in ``$HARNESS_HOME``, the workspace commit. Returns the slate and any shortfall left
    (guard notes for iteration one)."""
    prompt, slate, problems = first_prompt, None, ["no hypothesis slate was given"]
    for _ in range(MAX_ATTEMPTS):
        slate = parse_slate(ask(prompt)) or slate
        problems = slate.problems() if slate else ["no hypothesis slate was given"]
        if not problems:
            break
        prompt = (
            first_prompt
            + "\n\nYour previous slate was sent back: "
            + "; ".join(problems)
            + ". Answer again with the complete JSON block."
        )
    final = slate or Slate()
    record = LockRecord(
        case_id=case_dir.name, digest=digest(final), locked_at=clock.now(), slate=final
    )
    # The record first: a run killed before the commit still has the lock outside the case.
    _write_record(record)
    atomic_write_json(case_dir / FILE, record.file_data())
    if committer is not None:
        record.commit = committer(case_dir / FILE)
        _write_record(record)
    event(
        log,
        "precommitment_locked",
        case_id=record.case_id,
        candidates=len(final.hypothesis_slate),
        criteria=len(final.selection_criteria),
        commit=record.commit,
    )
    return final, [f"[PRECOMMIT] {p}" for p in problems]


def enforce(
    case_dir: Path, *, original: Callable[[Path], bytes | None] | None = None
) -> tuple[Slate | None, list[str]]:
    """The locked slate as recorded, and guard notes. A case file that no longer matches the
    record is put back from it. Without a record on this machine, the file as the workspace
    commit that created it holds it (``original``) and is recorded now. (None, []) when the
    case has no lock yet."""
    path = case_dir / FILE
    record = load_record(case_dir.name)
    notes: list[str] = []
    if record is None and original is not None:
        record = _from_history(case_dir.name, original(path))
    if record is None:
        if not path.exists():
            return None, []
        return _adopt(case_dir, path)
    current = _read(path)
    if current != record.file_data():
        atomic_write_text(path, json.dumps(record.file_data(), indent=2) + "\n")
        forged = digest(Slate.model_validate(current)) if _valid(current) else "unreadable"
        event(
            log,
            "precommitment_restored",
            logging.WARNING,
            case_id=record.case_id,
            recorded=record.digest,
            found=forged,
        )
        notes.append(
            f"[PRECOMMIT] {FILE} was changed after it was locked (it no longer matches the "
            "lock recorded outside the case folder): the original slate was put back. The "
            "lock cannot be rewritten; work from the slate you committed to."
        )
    return record.slate, notes


def load_record(case_id: str) -> LockRecord | None:
    try:
        return LockRecord.model_validate_json(record_path(case_id).read_bytes())
    except FileNotFoundError:
        return None
    except ValueError:
        event(log, "precommit_record_unreadable", logging.WARNING, case_id=case_id)
        return None


def _write_record(record: LockRecord) -> None:
    # The records' folder is guarded by every investigation's runs, other cases' included:
    # written so that their reverts leave it (agents/guard.py).
    path, text = record_path(record.case_id), record.model_dump_json(indent=2) + "\n"
    guard.harness_write(path, lambda: atomic_write_text(path, text))


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _valid(data: Any) -> bool:
    try:
        Slate.model_validate(data)
    except ValidationError:
        return False
    return isinstance(data, dict)


def _from_history(case_id: str, raw: bytes | None) -> LockRecord | None:
    """The record rebuilt from the file as first committed (another machine's lock)."""
    if raw is None:
        return None
    try:
        data = json.loads(raw)
        slate = Slate.model_validate(data)
        locked = datetime.fromisoformat(str(data["locked_at"]))
    except (ValueError, KeyError, TypeError, ValidationError):
        return None
    record = LockRecord(
        case_id=case_id, digest=digest(slate), locked_at=locked, slate=slate, commit=None
    )
    _write_record(record)
    return record


def _adopt(case_dir: Path, path: Path) -> tuple[Slate | None, list[str]]:
    """A lock with no record anywhere (made before records existed, or never committed on a
    machine that lost its home): its own digest is all there is to check it against."""
    data = _read(path)
    if not _valid(data):
        return None, [f"[PRECOMMIT] {FILE} is unreadable and no record of the lock exists"]
    slate = Slate.model_validate(data)
    try:
        locked = datetime.fromisoformat(str(data["locked_at"]))
    except (KeyError, ValueError):
        locked = clock.now()
    notes = []
    if data.get("digest") != digest(slate):
        notes.append(f"[PRECOMMIT] {FILE} was changed after it was locked (digest mismatch)")
    _write_record(LockRecord(case_id=case_dir.name, digest=digest(slate), locked_at=locked,
                             slate=slate))  # fmt: skip
    return slate, notes


def first_committed(workspace: Path) -> Callable[[Path], bytes | None]:
    """``original`` for ``enforce``: the file as the workspace commit that added it has it."""

    def read(path: Path) -> bytes | None:
        git = Git(workspace)
        try:
            rel = path.resolve().relative_to(workspace.resolve()).as_posix()
            added = git.run("log", "--diff-filter=A", "--format=%H", "--", rel).split()
            if not added:
                return None
            return git.run("show", f"{added[-1]}:{rel}").encode()
        except (HarnessError, ValueError, OSError):
            return None

    return read
