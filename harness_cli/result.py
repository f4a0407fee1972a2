"""What a command returns: data plus what changed, what was skipped and what failed.
Printed once, at the edge, as human text or ``--json`` (pipx's shape)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Result:
    """``data`` is what ``--json`` prints under ``data``; ``rows``/``columns`` render as a table
    for humans. "Already done" goes to ``skipped``, never to ``errors``."""

    action: str
    data: Any = None
    changed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    exit_code: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.exit_code == 0,
            "action": self.action,
            "data": self.data,
            "changed": self.changed,
            "skipped": self.skipped,
            "messages": self.messages,
            "errors": self.errors,
        }
