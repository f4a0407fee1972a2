"""``memory.json`` in the case folder: what the followup and consolidation remember between
runs — which replies were answered, how many since the last gap analysis, when the case was
last consolidated. In the git-synced case folder, so a second machine resumes from it.

Followup and consolidation both update it, so every read-modify-write holds the case's short
``memory-<case>`` lock (never across a model call).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli.errors import StateError
from harness_cli.state.locks import hold
from harness_cli.state.store import atomic_write_text, check_schema_version, unreadable_reason

FILE = "memory.json"


class ConsolidationRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    at: datetime
    outcome: str
    """``written`` or ``refused``."""
    signals: list[str] = Field(default_factory=list)
    transcripts: list[str] = Field(default_factory=list)
    bytes_before: int = 0
    """Size of the TASK.md that was (or would have been) replaced."""
    bytes_after: int = 0
    """Size of the proposed TASK.md."""
    note: str = ""


class MemoryState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    answered: dict[str, str] = Field(default_factory=dict)
    """``channel/thread_ts`` → ts of the newest reply the followup handled in that thread."""
    turns: int = 0
    """Followup turns run on this case."""
    replies_since_gap: int = 0
    """Replies answered since the last gap analysis (``gap_analyzer_every_replies``)."""
    gap_through: int = 0
    """The last transcript number the gap analyzer has seen."""
    last_consolidated_at: datetime | None = None
    last_refused_at: datetime | None = None
    """A refused consolidation quiets the automatic trigger for a while (``--force`` does not
    wait): the same proposal would be refused again, and the operator was told once."""
    consolidations: list[ConsolidationRecord] = Field(default_factory=list)


def path_of(case_dir: Path) -> Path:
    return case_dir / FILE


def load(case_dir: Path) -> MemoryState:
    path = path_of(case_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return MemoryState()
    check_schema_version(path, raw, MemoryState)
    try:
        return MemoryState.model_validate_json(raw)
    except (ValidationError, ValueError) as exc:
        raise StateError(
            f"{path} is unreadable ({unreadable_reason(raw, exc)})",
            hint="restore it from the workspace's git history, or remove it to start over",
        ) from None


@contextmanager
def update(case_id: str, case_dir: Path, *, timeout: float = 30.0) -> Iterator[MemoryState]:
    """``with update(id, dir) as state: …`` — written atomically if the block succeeds."""
    with hold(f"memory-{case_id}", timeout=timeout, what=f"memory of case {case_id}"):
        state = load(case_dir)
        yield state
        atomic_write_text(path_of(case_dir), state.model_dump_json(indent=2) + "\n")
