"""The dispatch payload: everything a workflow needs besides the workspace, in one file
``$HARNESS_HOME/payloads/<stamp>-<workflow>-<case_id>.json`` (CONTRACT §3), written once per
event (its idempotency key) and read back by the workflow it starts — on this machine or as a CI
job on another (ARCHITECTURE.md, "Scale")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import clock, paths
from harness_cli.errors import InputError, StateError
from harness_cli.state.store import atomic_create_bytes, atomic_write_text


class Trigger(BaseModel):
    model_config = ConfigDict(extra="allow")
    kind: str
    """What woke the workflow: new_ticket, operator_reply, admin_command, ci_failed, review_note…"""
    ts: str = ""
    user: str = ""


class Payload(BaseModel):
    """``$HARNESS_HOME/payloads/<stamp>-<workflow>-<case_id>.json`` (CONTRACT §3)."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = 1
    workflow: str
    case_id: str
    case_dir: str
    channel: str = ""
    thread_ts: str = ""
    trigger: Trigger
    created_at: datetime | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    """Workflow-specific arguments, e.g. ``{"mode": "fix_ci"}`` for dev-agent."""
    repo: str = ""
    """The GitLab project the workflow works on (dev-agent: the MR's repository, whose
    worktree it runs in — the harness's own repo for its improvement MRs, never the ticket's).
    Empty: the case's project decides."""
    key: str = ""
    """Idempotency key: one event (workflow, case, channel, trigger kind and ts) is dispatched
    once, however often a crashed run retries it. Derived from the trigger when it has a ts;
    empty for a trigger without one (every such dispatch is new)."""


def idempotency_key(payload: Payload) -> str:
    """``workflow|case|channel|trigger kind|trigger ts``; empty when the trigger has no ts."""
    trigger = payload.trigger
    if not trigger.ts:
        return ""
    return "|".join((payload.workflow, payload.case_id, payload.channel, trigger.kind, trigger.ts))


def write_payload(payload: Payload) -> Path:
    return write_payload_once(payload)[0]


def write_payload_once(payload: Payload) -> tuple[Path, bool]:
    """Write the payload under a name no other payload has; returns (path, existed).

    ``<stamp>-<workflow>-<case_id>.json`` (CONTRACT §3). The stamp is the trigger's Slack ts
    when it has one (else now), bumped by a microsecond past any name already taken: so two
    dispatches under a pinned HARNESS_NOW never share a file, and a payload with a ``key`` is
    found again under the same name (``existed``) instead of being written twice."""
    payload.created_at = payload.created_at or clock.now()
    payload.key = payload.key or idempotency_key(payload)
    base = _stamp_base(payload)
    folder = paths.payloads_dir()
    data = (payload.model_dump_json(indent=2) + "\n").encode()
    for bump in range(100_000):
        name = f"{clock.stamp(base + timedelta(microseconds=bump))}-{payload.workflow}-"
        path = folder / f"{name}{payload.case_id}.json"
        if not path.exists() and atomic_create_bytes(path, data):
            return path, False
        if payload.key and _key_of(path) == payload.key:
            return path, True
    raise StateError(f"no free payload name in {folder} for {payload.workflow}-{payload.case_id}")


def _stamp_base(payload: Payload) -> datetime:
    try:
        return datetime.fromtimestamp(float(payload.trigger.ts), UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return clock.now()


def _key_of(path: Path) -> str:
    try:
        return str(Payload.model_validate_json(path.read_bytes()).key)
    except (OSError, ValueError):
        return ""


def started_marker(payload_file: Path) -> Path:
    return payload_file.parent / ".started" / payload_file.name


def mark_started(payload_file: Path) -> None:
    atomic_write_text(started_marker(payload_file), clock.now().isoformat() + "\n")


def load_payload(path: Path) -> Payload:
    try:
        return Payload.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"payload file {path} not found") from None
    except (ValidationError, ValueError) as exc:
        first = str(exc).splitlines()
        raise InputError(
            f"{path}: not a dispatch payload ({'; '.join(first[:3])})",
            hint="payloads are written by the dispatcher; re-dispatch instead of editing one",
        ) from None
