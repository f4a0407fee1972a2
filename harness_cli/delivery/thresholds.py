"""The numbers behind worktree management and push recovery, in one place.

Each field quotes the reference rule it parameterises; the code reads its number from a
``DeliveryThresholds`` and nowhere else. ``agent-config/harness.yaml`` may override them.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class DeliveryThresholds(BaseModel):
    """Where worktrees live, and the L2 self-heal budget and confidence gate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    worktree_root: str = "~/.worktrees"
    """“Ahead of any agent that must change code, it builds a sandboxed worktree under
    ~/.worktrees/case-<case_id>-<stamp>/, checked out from a clean branch.” The per-repo
    mirrors live under ``<worktree_root>/.mirrors/``, each case's own repository under
    ``<worktree_root>/.repos/``."""
    push_heal_attempts: int = Field(3, ge=1)
    """L2 bounded retry: “Each incident gets 3 attempts at most … If the next push returns
    non-zero, the loop logs a failed attempt however confidently Claude claimed success.”"""
    push_heal_turn_timeout_s: float = Field(240.0, gt=0)
    """L2 bounded retry: “… and each Claude turn has a 4-minute timeout.”"""
    push_heal_min_confidence: int = Field(70, ge=0, le=100)
    """L2 confidence gate: “Claude rates itself 0 to 100 each turn, and below 70 it must bail
    instead of acting. A self-report under the floor doesn't get to touch the working tree.”"""
    push_heal_max_turns: int = Field(30, ge=1)
    """Tool-use turns one L2 attempt may take before the runtime stops it (the wall clock above
    is the real bound; this one stops a model that loops on cheap calls)."""
    commit_author: str = ""
    """Style SOP: "The MR belongs to the team and not to the model." The author of every commit
    the harness puts on a case branch, ``"Name <email>"``. Empty: the machine's git identity
    (what ``harness doctor`` reports); with neither, nothing is committed. A placeholder
    (``harness <harness@localhost>``, a model's or a bot's name) is refused."""
    stale_worktree_days: float = Field(7.0, gt=0)
    """“Once the MR is merged or closed, the worktree is removed.” A worktree whose MR never
    reports back (the case was abandoned) is pruned after this many idle days."""

    def root(self) -> Path:
        """``HARNESS_WORKTREES`` if set (tests, demo), else ``worktree_root``, ``~`` expanded."""
        return Path(os.environ.get("HARNESS_WORKTREES") or self.worktree_root).expanduser()
