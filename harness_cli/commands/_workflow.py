"""What every workflow subcommand shares: the case from ``CASE`` or ``--payload FILE``, and the
per-(workflow, case) lock that makes a second concurrent start exit 3."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness_cli.dispatch import Payload, load_payload
from harness_cli.errors import InputError, PolicyRefused
from harness_cli.state.locks import workflow_lock
from harness_cli.workspace.case import validate_case_id


@dataclass
class Invocation:
    workflow: str
    case_id: str
    payload: Payload | None


def resolve(workflow: str, case_arg: str | None, payload_file: str | None) -> Invocation:
    payload = load_payload(Path(payload_file)) if payload_file else None
    if payload is not None and payload.workflow != workflow:
        raise InputError(
            f"{payload_file} is a {payload.workflow} payload, not {workflow}",
            hint=f"run `harness {payload.workflow} --payload {payload_file}`",
        )
    case_id = case_arg or (payload.case_id if payload else None)
    if not case_id:
        raise InputError(
            f"{workflow} needs a CASE or --payload FILE", hint=f"e.g. harness {workflow} AAA-123"
        )
    if payload is not None and case_arg and case_arg != payload.case_id:
        raise InputError(f"CASE {case_arg} does not match the payload's case {payload.case_id}")
    return Invocation(workflow, validate_case_id(case_id), payload)


@contextmanager
def running(inv: Invocation) -> Iterator[Invocation]:
    """The per-(workflow, case) lock (exit 3), and the pause gate once more at start: a payload
    dispatched by someone else's activity just before a pause must not run during it."""
    if inv.payload is not None:
        from harness_cli.intake import pause

        kind = inv.payload.trigger.kind
        # Held work is replayed when the pause ends, as a new payload (this one has started).
        again = inv.payload.model_copy(
            update={"key": f"{inv.payload.key or uuid.uuid4().hex}|held"}
        )
        if not pause.allow(
            kind,
            case_id=inv.case_id,
            detail=f"{inv.workflow} ({kind})",
            payload=again.model_dump(mode="json", exclude={"created_at"}),
        ):
            raise PolicyRefused(
                f"{inv.workflow} on {inv.case_id} was triggered by {kind} and the harness is "
                "paused",
                hint="held back: it runs by itself once the pause ends (`harness status` "
                "lists it until then)",
            )
    with workflow_lock(inv.workflow, inv.case_id):
        yield inv
