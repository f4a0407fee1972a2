"""The dispatch backends (``HARNESS_DISPATCH``), one class each behind the :class:`Backend`
Protocol: ``systemd`` (a transient user unit named after workflow and case, so systemd itself
refuses a second copy), ``local`` (a detached process with its own log file), ``inline`` (same
process, synchronous: tests and ``demo``; it runs the workflow through the callable the edge
hands it, never by importing the CLI), ``record`` (payload only), ``gitlab-ci`` and
``github-actions`` (a pipeline / workflow run of the harness's own project:
:mod:`harness_cli.dispatch.ci`)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from harness_cli import paths
from harness_cli.dispatch import ci as ci_dispatch
from harness_cli.dispatch.payload import Payload
from harness_cli.errors import ConfigError, StateError
from harness_cli.logs import event

log = logging.getLogger("harness.dispatch")

BackendName = Literal["systemd", "local", "inline", "record", "gitlab-ci", "github-actions"]
BACKENDS: tuple[BackendName, ...] = (
    "systemd", "local", "inline", "record", "gitlab-ci", "github-actions",
)  # fmt: skip
RunCommand = Callable[[list[str]], int]
"""Runs one ``harness`` command line in this process and returns its exit code (``cli.run``)."""
CiClient = Callable[[str], Any]
"""Builds the client of a CI backend (``gitlab-ci`` / ``github-actions``): the edge's
:func:`harness_cli.wiring.ci_client` (a recording one during ``--dry-run``)."""


@dataclass(frozen=True)
class Started:
    started: bool
    detail: str = ""
    exit_code: int | None = None
    """Only for ``inline``: the workflow's own exit code."""


class Backend(Protocol):
    """Starts a workflow whose payload is written; says whether it started and how."""

    name: BackendName

    def start(self, payload: Payload, payload_file: Path) -> Started: ...


def choose_backend(configured: str | None = None) -> BackendName:
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


_inline_run: RunCommand | None = None
_ci_client: CiClient | None = None


def use_inline_runner(run: RunCommand) -> None:
    """The edge (:func:`harness_cli.wiring.install`) hands the inline backend the CLI's
    in-process entry before a command runs: dispatch sits below the CLI and never imports it."""
    global _inline_run
    _inline_run = run


def use_ci_client(build: CiClient) -> None:
    """The edge hands the CI backends the builder of their client (dispatch builds none)."""
    global _ci_client
    _ci_client = build


def inline_runner() -> RunCommand:
    if _inline_run is None:
        raise StateError(
            "the inline dispatch backend was not handed a runner",
            hint="run through the `harness` CLI, or call harness_cli.wiring.install() first",
        )
    return _inline_run


class Record:
    name: BackendName = "record"

    def start(self, payload: Payload, payload_file: Path) -> Started:
        return Started(False, "recorded only")


class Inline:
    name: BackendName = "inline"

    def start(self, payload: Payload, payload_file: Path) -> Started:
        code = inline_runner()([payload.workflow, "--payload", str(payload_file)])
        return Started(True, exit_code=code)


class Ci:
    """``gitlab-ci`` / ``github-actions``: a pipeline of the harness's own project."""

    def __init__(self, name: BackendName) -> None:
        self.name = name

    def start(self, payload: Payload, payload_file: Path) -> Started:
        if _ci_client is None:
            raise StateError(
                f"the {self.name} dispatch backend was not handed a client",
                hint="run through the `harness` CLI, or call harness_cli.wiring.install() first",
            )
        started, detail = ci_dispatch.start(
            payload, payload_file, _ci_client(self.name), backend=self.name
        )
        return Started(started, detail)


class Systemd:
    name: BackendName = "systemd"

    def start(self, payload: Payload, payload_file: Path) -> Started:
        unit = _unit_name(payload.workflow, payload.case_id)
        argv = command_line(payload.workflow, payload_file)
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
            event(log, "dispatch_skipped", logging.WARNING, unit=unit, stderr=proc.stderr[-300:],
                  workflow=payload.workflow, case_id=payload.case_id, backend=self.name,
                  trigger=payload.trigger.kind, payload=str(payload_file))  # fmt: skip
            return Started(False, proc.stderr.strip())
        return Started(True, f"unit {unit}")


class Local:
    name: BackendName = "local"

    def start(self, payload: Payload, payload_file: Path) -> Started:
        logfile = paths.logs_dir() / "workflows" / f"{payload_file.stem}.log"
        logfile.parent.mkdir(parents=True, exist_ok=True)
        with open(logfile, "ab") as out:
            subprocess.Popen(
                command_line(payload.workflow, payload_file),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        return Started(True, f"log {logfile}")


def backend(name: BackendName) -> Backend:
    if name == "record":
        return Record()
    if name == "inline":
        return Inline()
    if name in ("gitlab-ci", "github-actions"):
        return Ci(name)
    if name == "systemd":
        return Systemd()
    return Local()


def _unit_name(workflow: str, case_id: str) -> str:
    return "harness-" + re.sub(r"[^A-Za-z0-9:_.-]", "_", f"{workflow}-{case_id}")


def command_line(workflow: str, payload_file: Path) -> list[str]:
    return [sys.executable, "-m", "harness_cli", workflow, "--payload", str(payload_file)]


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
