"""One logger tree (``harness.*``); handlers are installed only at the CLI edge.

- ``logs/agent.log``: every event, JSON lines (``ts``, ``level``, ``event``, ``case_id``, …)
- ``logs/error.log``: errors only
- ``logs/system.log``: cross-cutting events (logger ``harness.system``: deploys, watchdog, sync)
- stderr: warnings (debug with ``-v``), rich on a terminal, JSON lines under cron.

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
            entry.update(fields)
        if record.exc_info:
            entry["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, default=str)


class _LazyRotatingHandler(logging.handlers.RotatingFileHandler):
    """Creates the logs folder on first write, so ``harness --help`` writes nothing."""

    def _open(self):  # type: ignore[no-untyped-def]
        os.makedirs(os.path.dirname(self.baseFilename), exist_ok=True)
        return super()._open()


def event(logger: logging.Logger, name: str, level: int = logging.INFO, /, **fields: Any) -> None:
    """Log one structured event: ``event(log, "dispatch", case_id=…, workflow=…)``."""
    logger.log(level, name, extra={"fields": fields})


def setup_cli_logging(*, verbose: bool = False) -> None:
    """Install handlers once per process (the inline dispatcher re-enters the CLI)."""
    from harness_cli import paths

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

    console: logging.Handler
    if sys.stderr.isatty():
        from rich.logging import RichHandler

        console = RichHandler(show_path=False, markup=False, rich_tracebacks=False)
    else:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(JsonLines())
    add(console, logging.DEBUG if verbose else logging.WARNING)
