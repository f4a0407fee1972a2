"""Start a workflow: write its payload file, then hand it to a backend.

Backends (``HARNESS_DISPATCH``): ``systemd`` (a transient user unit named after workflow and
case, so systemd itself refuses a second copy), ``local`` (a detached process with its own log
file), ``inline`` (same process, synchronous: tests and ``demo``), ``record`` (payload only).
Whatever the backend, the workflow takes a per-(workflow, case) lock when it starts, so the
same workflow never runs twice at once on one case (the second exits 3).

The payload carries everything a workflow needs besides the workspace, so a later backend can
run it as a CI job or a Kubernetes Job on another machine (ARCHITECTURE.md, "Scale").
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness_cli import clock, paths
from harness_cli.errors import ConfigError, InputError
from harness_cli.logs import event
from harness_cli.state.store import atomic_write_text

log = logging.getLogger("harness.dispatch")

Backend = Literal["systemd", "local", "inline", "record"]
BACKENDS: tuple[Backend, ...] = ("systemd", "local", "inline", "record")


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


@dataclass
class Dispatched:
    backend: Backend
    payload_file: Path
    started: bool
    exit_code: int | None = None
    """Only for ``inline``: the workflow's own exit code."""
    detail: str = ""


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


def write_payload(payload: Payload) -> Path:
    payload.created_at = payload.created_at or clock.now()
    name = f"{clock.stamp()}-{payload.workflow}-{payload.case_id}.json"
    path = paths.payloads_dir() / name
    atomic_write_text(path, payload.model_dump_json(indent=2) + "\n")
    return path


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
    """Write the payload, then start the workflow with the chosen backend."""
    chosen = backend or choose_backend()
    payload_file = write_payload(payload)
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
    argv = command_line(payload.workflow, payload_file)
    if chosen == "systemd":
        unit = _unit_name(payload.workflow, payload.case_id)
        proc = subprocess.run(
            [
                "systemd-run",
                "--user",
                "--collect",
                "--quiet",
                f"--unit={unit}",
                *[f"--setenv={k}={os.environ[k]}" for k in _passed_env()],
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
