"""A run and what it came to: what every workflow's entry takes and returns
(``workflows.table``), and what the one runner (``workflows.runner.run``) wraps in the pause
gate, the lock, the work session, the journal and the cost scope."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_cli.dispatch.payload import Payload
from harness_cli.outbox.doors import Doors
from harness_cli.result import Result


@dataclass
class Run:
    workflow: str
    case_id: str
    payload: Payload | None = None
    payload_file: str = ""
    """The payload's absolute path ("" for a run typed at a shell)."""
    args: dict[str, Any] = field(default_factory=dict)
    """What the run was asked to do beyond its case (dev-agent's mode …): with the payload, the
    identity a resumed run is recognised by."""
    post: bool = True
    """False: a dry run (``--no-post``) — nothing posted, and for investigate nothing committed
    or pushed."""
    options: dict[str, Any] = field(default_factory=dict)
    """The command's flags that do not make it another run (consolidate's ``--force``), and
    what it hands the entry beyond the doors (finalize's eval, a tool no layer imports)."""
    doors: Doors = field(kw_only=True)
    """What the run may speak through, built by the edge."""

    @property
    def trigger_kind(self) -> str | None:
        return self.payload.trigger.kind if self.payload is not None else None


@dataclass
class Outcome(Result):
    """What the run came to: the command's result (``action`` is the workflow), plus the
    harness's own one-line summary for the work session's outcome report (never third-party
    text: the run's messages may quote it)."""

    summary: str = ""
    failed: bool = False
