"""One logger tree (``harness.*``); handlers are installed only at the CLI edge.

- ``logs/agent.log``: every event, JSON lines (``ts``, ``level``, ``event``, ``case_id``, …)
- ``logs/error.log``: errors only
- ``logs/system.log``: cross-cutting events (logger ``harness.system``: deploys, watchdog, sync)
- stderr: warnings (debug with ``-v``), rich on a terminal, JSON lines under cron.

Every handler passes through one redaction filter: no token reaches a log, an error line or a
crash file.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import re
import sys
from datetime import UTC, datetime
from typing import Any

ROOT = "harness"
SYSTEM = "harness.system"

_SECRET_PATTERNS = [
    re.compile(r"xox[abposre]-[A-Za-z0-9-]{6,}"),
    re.compile(r"xapp-[A-Za-z0-9-]{6,}"),
    re.compile(r"gl(?:pat|dt|rt|ptt|oas|cbt|imt|ft|agent)-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"),
    re.compile(r"(?i)(private-token[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._\-]{8,}"),
    re.compile(r"(?i)(x-api-key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9._\-]{8,}"),
    # credentials embedded in a URL: scheme://user:secret@host
    re.compile(r"(?<=://)([^/\s:@]+):([^/\s@]+)@"),
]
_SECRET_ENV = (
    "SLACK_USER_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_BOT_TOKEN",
    "GITLAB_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "PAGERDUTY_TOKEN",
)
REDACTED = "[REDACTED]"


def redact(text: str) -> str:
    """Replace anything that looks like a token, and the value of every secret variable."""
    for name in _SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 6:
            text = text.replace(value, REDACTED)
    for pattern in _SECRET_PATTERNS:
        if pattern.groups == 2:  # url credentials: keep the user, hide the secret
            text = pattern.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
        elif pattern.groups == 1:
            text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
        else:
            text = pattern.sub(REDACTED, text)
    return text


class RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            record.fields = {k: _redact_value(v) for k, v in fields.items()}
        return True


def _redact_value(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


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
    console.addFilter(_not_for_console)
    add(console, logging.DEBUG if verbose else logging.WARNING)
