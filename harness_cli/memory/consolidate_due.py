"""``consolidate --due``: walk every case and consolidate those whose trigger fires. The trigger
is read from files only, so a walk where nothing fires makes no model call at all. Closed
cases are walked too: one that closed since its last consolidation fires "a review thread that
just closed", and one with nothing left to fold in costs a directory listing."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from harness_cli import clock
from harness_cli.config import Config
from harness_cli.errors import HarnessError, LockHeld, PolicyRefused
from harness_cli.memory import state as memstate
from harness_cli.memory import transcripts
from harness_cli.memory.consolidate import Consolidation, consolidate_case
from harness_cli.memory.thresholds import thresholds_from
from harness_cli.memory.trigger import evaluate
from harness_cli.outbox.doors import Doors
from harness_cli.outbox.outbound import Outbound
from harness_cli.sessions.waiting import AwaitingApproval
from harness_cli.state.locks import workflow_lock
from harness_cli.workspace import registry


@dataclass
class DueWalk:
    done: list[Consolidation] = field(default_factory=list)
    not_due: list[str] = field(default_factory=list)
    locked: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    """``<case>: <the gate's line>``: another session (maybe another machine's) holds it."""
    waiting: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "done": [c.to_json() for c in self.done],
            "not_due": self.not_due,
            "locked": self.locked,
            "failed": self.failed,
            "denied": self.denied,
            "waiting": self.waiting,
        }


Enter = Callable[[str], AbstractContextManager[object]]
"""What a sweep wraps each case it acts on in: the command passes the shared workflow entry
(lock, work session with its preflight gate, journal, cost); the default is the lock alone."""


def consolidate_due(
    cfg: Config, *, doors: Doors, out: Outbound | None = None, enter: Enter | None = None
) -> DueWalk:

    opened: Enter = enter or (lambda case_id: workflow_lock("consolidate", case_id))
    limits = thresholds_from(cfg.harness)
    walk = DueWalk()
    now = clock.now()
    for summary in registry.list_cases():
        case_id = str(summary.get("id") or "")
        if not case_id:
            continue  # a closed case too: "a review thread that just closed" is a signal

        try:
            folder = registry.case_dir(case_id)
            check = evaluate(
                limits,
                now=now,
                state=memstate.load(folder),
                pending=transcripts.unconsolidated(folder),
                case=registry.load_case(case_id),
            )
            if not check.fires:
                walk.not_due.append(case_id)
                continue
            with opened(case_id):
                walk.done.append(consolidate_case(case_id, cfg=cfg, doors=doors, out=out))
        except LockHeld:
            walk.locked.append(case_id)
        except PolicyRefused as exc:  # one busy case never stops the others
            walk.denied.append(f"{case_id}: {exc.message}")
        except AwaitingApproval as exc:
            walk.waiting.append(f"{case_id}: {exc.message}")
        except HarnessError as exc:
            walk.failed.append(f"{case_id}: {exc.line()}")
    return walk
