"""Replay what a pause held, once it is over (reference Layer 6: pause is "directed silence",
not loss).

The queue lives in ``oncall-state.json`` (``held_work``). Replay walks it oldest first: dispatch
the item, then drop it. A crash between the two dispatches it again next time under the same
payload ``key``, which the dispatcher recognises — so each held item runs exactly once, in the
order it was held. One replay at a time (a lock), and none while a pause is on.
"""

from __future__ import annotations

import logging

from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch.backends import BackendName
from harness_cli.dispatch.payload import Payload
from harness_cli.intake import pause
from harness_cli.logs import event
from harness_cli.state import files
from harness_cli.state.locks import hold

log = logging.getLogger("harness.pause")


def replay(backend: BackendName) -> list[str]:
    """Dispatch every held item if no pause is on; returns ``workflow case_id`` of each."""
    if not _due():
        return []
    done: list[str] = []
    with hold("held-work-replay", timeout=60, what="the replay of held work"):
        while True:
            state = files.oncall_state().read()
            if pause.active(state) or not state.held_work:
                break
            item = state.held_work[0]
            payload = Payload.model_validate(item.payload)
            dispatch.dispatch(payload, backend=backend)
            pause.pop_held(payload.key, item)
            done.append(f"{item.workflow} {item.case_id}")
            event(log, "held_work_replayed", case_id=item.case_id, workflow=item.workflow,
                  trigger=item.trigger, held_at=item.at.isoformat())  # fmt: skip
    return done


def _due() -> bool:
    state = files.oncall_state().read()
    return bool(state.held_work) and not pause.active(state)
