"""Start a workflow: write its payload file, then hand it to a backend.

Backends (``HARNESS_DISPATCH``): ``systemd`` (a transient user unit named after workflow and
case, so systemd itself refuses a second copy), ``local`` (a detached process with its own log
file), ``inline`` (same process, synchronous: tests and ``demo``), ``record`` (payload only),
``gitlab-ci`` (a pipeline of the harness's own GitLab project: :mod:`harness_cli.ci_dispatch`).
Whatever the backend, the workflow takes a per-(workflow, case) lock when it starts, so the
same workflow never runs twice at once on one case (the second exits 3).

The payload carries everything a workflow needs besides the workspace, so a later backend can
run it as a CI job or a Kubernetes Job on another machine (ARCHITECTURE.md, "Scale").
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import clock, paths, run_slots
from harness_cli.errors import ConfigError, InputError, StateError
from harness_cli.faults import crash_point
from harness_cli.logs import event
from harness_cli.state.store import atomic_create_bytes, atomic_write_text

log = logging.getLogger("harness.dispatch")

Backend = Literal["systemd", "local", "inline", "record", "gitlab-ci", "github-actions"]
WAITING = "waiting for a free workflow slot (run-queue.json)"
BACKENDS: tuple[Backend, ...] = (
    "systemd", "local", "inline", "record", "gitlab-ci", "github-actions",
)  # fmt: skip


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


@dataclass
class Dispatched:
    backend: Backend
    payload_file: Path
    started: bool
    exit_code: int | None = None
    """Only for ``inline``: the workflow's own exit code."""
    detail: str = ""
    duplicate: bool = False
    """The same event was dispatched before (same ``key``): nothing new was written or started."""


def choose_backend(configured: str | None = None) -> Backend:
    value = os.environ.get("HARNESS_DISPATCH") or configured
    if value:
        if value not in BACKENDS:
            raise ConfigError(
                f"HARNESS_DISPATCH={value!r} is not a dispatch backend",
                hint=f"use one of: {', '.join(BACKENDS)}",
            )
        return value
    return "systemd" if _systemd_available() else "local"


def _systemd_available() -> bool:
    if not shutil.which("systemd-run") or not os.environ.get("XDG_RUNTIME_DIR"):
        return False
    probe = subprocess.run(
        ["systemctl", "--user", "is-system-running"], capture_output=True, text=True, check=False
    )
    return probe.stdout.strip() in {"running", "degraded"}


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


def _started_marker(payload_file: Path) -> Path:
    return payload_file.parent / ".started" / payload_file.name


def _mark_started(payload_file: Path) -> None:
    atomic_write_text(_started_marker(payload_file), clock.now().isoformat() + "\n")


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


def _unit_name(workflow: str, case_id: str) -> str:
    return "harness-" + re.sub(r"[^A-Za-z0-9:_.-]", "_", f"{workflow}-{case_id}")


def command_line(workflow: str, payload_file: Path) -> list[str]:
    return [sys.executable, "-m", "harness_cli", workflow, "--payload", str(payload_file)]


def dispatch(payload: Payload, *, backend: Backend | None = None) -> Dispatched:
    """Write the payload, then start the workflow with the chosen backend. Idempotent by the
    payload's ``key``: a payload already written is not written again, and one already started
    is not started again (for ``record`` writing it is the dispatch)."""
    chosen = backend or choose_backend()
    payload_file, existed = write_payload_once(payload)
    crash_point("dispatch.payload")
    if existed and (chosen == "record" or _started_marker(payload_file).exists()):
        event(log, "dispatch_duplicate", workflow=payload.workflow, case_id=payload.case_id,
              key=payload.key, payload=str(payload_file))  # fmt: skip
        return Dispatched(chosen, payload_file, started=False, detail="already", duplicate=True)
    if chosen in run_slots.CAPPED and not run_slots.admit(payload_file):
        return Dispatched(chosen, payload_file, started=False, detail=WAITING)
    started = _start(payload, payload_file, chosen)
    if started.started:
        _mark_started(payload_file)
    crash_point("dispatch.started")
    return started


def start_waiting(backend: Backend | None = None) -> list[str]:
    """Start the runs waiting for a workflow slot (``run_slots``), oldest first, as slots free."""
    chosen = backend or choose_backend()

    def start(path: Path) -> bool:
        started = _start(load_payload(path), path, chosen).started
        if started:
            _mark_started(path)
        return started

    return run_slots.pump(start) if chosen in run_slots.CAPPED else []


def _start(payload: Payload, payload_file: Path, chosen: Backend) -> Dispatched:
    fields = {
        "workflow": payload.workflow,
        "case_id": payload.case_id,
        "backend": chosen,
        "trigger": payload.trigger.kind,
        "payload": str(payload_file),
    }
    event(log, "dispatch", **fields)
    if chosen == "record":
        return Dispatched(chosen, payload_file, started=False, detail="recorded only")
    if chosen == "inline":
        from harness_cli.cli import run

        code = run([payload.workflow, "--payload", str(payload_file)])
        return Dispatched(chosen, payload_file, started=True, exit_code=code)
    if chosen in ("gitlab-ci", "github-actions"):
        from harness_cli import ci_dispatch

        started, detail = ci_dispatch.start(payload, payload_file, backend=chosen)
        return Dispatched(chosen, payload_file, started=started, detail=detail)
    argv = command_line(payload.workflow, payload_file)
    if chosen == "systemd":
        unit = _unit_name(payload.workflow, payload.case_id)
        with unit_env_file(unit) as env_file:  # R9: no value on systemd-run's command line
            proc = subprocess.run(
                [
                    "systemd-run",
                    "--user",
                    "--collect",
                    "--quiet",
                    f"--unit={unit}",
                    f"--property=EnvironmentFile={env_file}",
                    *argv,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
        if proc.returncode != 0:
            event(
                log,
                "dispatch_skipped",
                logging.WARNING,
                unit=unit,
                stderr=proc.stderr[-300:],
                **fields,
            )
            return Dispatched(chosen, payload_file, started=False, detail=proc.stderr.strip())
        return Dispatched(chosen, payload_file, started=True, detail=f"unit {unit}")
    logfile = paths.logs_dir() / "workflows" / f"{payload_file.stem}.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "ab") as out:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return Dispatched(chosen, payload_file, started=True, detail=f"log {logfile}")


def spawn(argv: list[str], *, backend: Backend | None = None) -> int | None:
    """Start a command that is not tied to one case (e.g. ``gap-patterns``): inline runs it
    here and returns its code; record does nothing; the others detach it."""
    chosen = backend or choose_backend()
    event(log, "spawn", argv=argv, backend=chosen)
    if chosen == "record":
        return None
    if chosen == "inline":
        from harness_cli.cli import run

        return run(argv)
    logfile = paths.logs_dir() / "workflows" / f"{clock.stamp()}-{argv[0]}.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with open(logfile, "ab") as out:
        subprocess.Popen(
            [sys.executable, "-m", "harness_cli", *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return None


def _passed_env() -> list[str]:
    """What a transient unit must inherit: our variables and the services' (never printed)."""
    prefixes = ("HARNESS_", "SLACK_", "GITLAB_", "ANTHROPIC_", "CLAUDE_", "PATH", "HOME")
    return [k for k in os.environ if k.startswith(prefixes)]


@contextlib.contextmanager
def unit_env_file(unit: str) -> Iterator[Path]:
    """The unit's environment as a file only this user can read (``EnvironmentFile=``), gone
    once systemd-run returns (it waits for the start job, which read it). #28 R9: values passed
    as ``--setenv=NAME=VALUE`` were in every process list and stayed in the unit's properties;
    from a file they reach only the workflow's own environment."""
    folder = paths.home() / "run"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"{unit}.{os.getpid()}.env"
    lines = [f"{k}={_quoted(os.environ[k])}\n" for k in _passed_env() if "\n" not in os.environ[k]]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(lines)
        yield path
    finally:
        path.unlink(missing_ok=True)


def _quoted(value: str) -> str:
    """A value as systemd's EnvironmentFile= reads it back unchanged: double quotes, with
    backslash, quote, dollar and backtick escaped."""
    return '"' + re.sub(r'([\\"$`])', r"\\\1", value) + '"'
