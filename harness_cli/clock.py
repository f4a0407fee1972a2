"""The one clock every time-based rule reads (idle timers, pauses, budgets, expiries).

``HARNESS_NOW`` (ISO-8601) pins "now" for tests and incident replays; nothing else in the
package reads the wall clock for a rule.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from harness_cli.errors import ConfigError


def now() -> datetime:
    """The current instant, timezone-aware (UTC), honouring ``HARNESS_NOW``."""
    pinned = os.environ.get("HARNESS_NOW")
    if pinned:
        return parse_instant(pinned, source="HARNESS_NOW")
    return datetime.now(UTC)


def parse_instant(text: str, *, source: str) -> datetime:
    """Parse an ISO-8601 instant; a naive one is taken as UTC."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{source}={text!r} is not an ISO-8601 instant",
            hint="use e.g. 2026-11-29T10:00:00Z",
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def stamp(at: datetime | None = None) -> str:
    """A sortable, filename-safe stamp with microseconds, e.g. ``20261129T104500123456Z``."""
    return (at or now()).astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")


def epoch(at: datetime | None = None) -> float:
    return (at or now()).timestamp()
