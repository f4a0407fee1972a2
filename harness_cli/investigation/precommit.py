"""The pre-commitment lock: before iteration one the model commits a hypothesis slate (at
least six candidates, four or five criteria), locked into ``kickoff_precommitment.json``.

"An unconstrained LLM reasoning loop tends to settle on whatever its first evidence favors
[...] The lock can't stop that pull. What it does is force every investigation to begin from
the whole hypothesis space." The file is stored with its digest; a later change is detected.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from harness_cli import clock
from harness_cli.investigation.jsonblocks import json_objects
from harness_cli.logs import event
from harness_cli.state.store import atomic_write_json

log = logging.getLogger("harness.precommit")

FILE = "kickoff_precommitment.json"
MIN_CANDIDATES = 6
CRITERIA = (4, 5)
MAX_ATTEMPTS = 3
"""A short slate is sent back; after this many tries the investigation starts with what it has
and the shortfall becomes a guard note."""


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


def digest(slate: Slate) -> str:
    canonical = json.dumps(slate.model_dump(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_slate(text: str) -> Slate | None:
    for block in reversed(json_objects(text)):
        try:
            slate = Slate.model_validate(block)
        except ValidationError:
            continue
        if slate.hypothesis_slate or slate.selection_criteria:
            return slate
    return None


def commit(case_dir: Path, ask: Callable[[str], str], first_prompt: str) -> tuple[Slate, list[str]]:
    """Ask for the slate until it is complete (bounded); lock it. Returns it and any
    shortfall left (guard notes for iteration one)."""
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
    atomic_write_json(
        case_dir / FILE,
        {"locked_at": clock.now().isoformat(), "digest": digest(final), **final.model_dump()},
    )
    event(
        log,
        "precommitment_locked",
        candidates=len(final.hypothesis_slate),
        criteria=len(final.selection_criteria),
    )
    return final, [f"[PRECOMMIT] {p}" for p in problems]


def load_locked(case_dir: Path) -> tuple[Slate | None, str | None]:
    """The locked slate and, if it was changed after locking, what changed."""
    path = case_dir / FILE
    if not path.exists():
        return None, None
    try:
        data = json.loads(path.read_text())
        slate = Slate.model_validate(data)
    except (ValueError, ValidationError):
        return None, f"{FILE} is unreadable: the locked slate was damaged after locking"
    if data.get("digest") != digest(slate):
        return slate, f"{FILE} was changed after it was locked (digest mismatch)"
    return slate, None
