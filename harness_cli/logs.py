"""One logger tree (``harness.*``); handlers are installed only at the CLI edge.

- ``logs/agent.log``: every event, JSON lines (``ts``, ``level``, ``event``, ``case_id``, …)
- ``logs/error.log``: errors only
- ``logs/system.log``: cross-cutting events (logger ``harness.system``: deploys, watchdog, sync)
- stderr: warnings (debug with ``-v``): one readable line each on a terminal
  (``warning: event — key=value …``), JSON lines under cron.

Every handler passes through one redaction filter, which calls the harness's one redaction
point (:mod:`harness_cli.redaction`): no token reaches a log, an error line or a crash file.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import sys
from datetime import UTC, datetime
from typing import Any

from harness_cli import paths
from harness_cli.redaction import REDACTED, redact, redact_value

__all__ = [
    "REDACTED",
    "ROOT",
    "SYSTEM",
    "JsonLines",
    "RedactFilter",
    "event",
    "redact",
    "setup_cli_logging",
]

ROOT = "harness"
SYSTEM = "harness.system"


class RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            record.fields = {k: redact_value(v) for k, v in fields.items()}
        return True


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update({k: v for k, v in fields.items() if k != "_console"})
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, default=str)


class TerminalLine(logging.Formatter):
    """One line per record for a person at a terminal: ``warning: <event> — k=v, …``. The JSON
    files keep every detail; a traceback shows only with ``-v``."""

    def __init__(self, *, verbose: bool = False) -> None:
        super().__init__()
        self.verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and fields:
            shown = ", ".join(f"{k}={' '.join(str(v).split())}" for k, v in fields.items())
            text += f" — {shown}"
        line = f"{record.levelname.lower()}: {text}"
        if record.exc_info and self.verbose:
            line += "\n" + redact(self.formatException(record.exc_info))
        elif record.exc_info and record.exc_info[1] is not None:
            line += f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})"
        return line


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time, so a live status line (which redirects
    it) prints log lines above itself instead of being overwritten by them."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


class _LazyRotatingHandler(logging.handlers.RotatingFileHandler):
    """Creates the logs folder on first write, so ``harness --help`` writes nothing."""

    def _open(self):  # type: ignore[no-untyped-def]
        os.makedirs(os.path.dirname(self.baseFilename), exist_ok=True)
        return super()._open()


def event(logger: logging.Logger, name: str, level: int = logging.INFO, /, **fields: Any) -> None:
    """Log one structured event: ``event(log, "dispatch", case_id=…, workflow=…)``."""
    logger.log(level, name, extra={"fields": fields})


def _not_for_console(record: logging.LogRecord) -> bool:
    """Events logged with ``_console=False`` go to the files only (their line is on stderr)."""
    fields = getattr(record, "fields", None)
    return not (isinstance(fields, dict) and fields.get("_console") is False)


def setup_cli_logging(*, verbose: bool = False) -> None:
    """Install handlers once per process (the inline dispatcher re-enters the CLI)."""

    root = logging.getLogger(ROOT)
    for handler in list(root.handlers):
        if getattr(handler, "_harness", False):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(logging.DEBUG)
    root.propagate = False
    redactor = RedactFilter()
    logs = paths.logs_dir()
    max_bytes, backups = 5 * 1024 * 1024, 5

    def add(handler: logging.Handler, level: int, only: str | None = None) -> None:
        handler.setLevel(level)
        handler.addFilter(redactor)
        if only:
            handler.addFilter(logging.Filter(only))
        handler._harness = True  # type: ignore[attr-defined]
        root.addHandler(handler)

    for filename, level, only in (
        ("agent.log", logging.INFO, None),
        ("error.log", logging.ERROR, None),
        ("system.log", logging.INFO, SYSTEM),
    ):
        handler = _LazyRotatingHandler(
            logs / filename, maxBytes=max_bytes, backupCount=backups, delay=True, encoding="utf-8"
        )
        handler.setFormatter(JsonLines())
        add(handler, level, only)

    console = _Stderr()
    console.setFormatter(TerminalLine(verbose=verbose) if sys.stderr.isatty() else JsonLines())
    console.addFilter(_not_for_console)
    add(console, logging.DEBUG if verbose else logging.WARNING)
