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


def human(at: datetime, reference: datetime | None = None) -> str:
    """An instant the way an operator reads it in Slack: ``14:30 UTC (in 29 min)``, with the
    date when it is not today (``Dec 3 14:30 UTC (in 2 days)``), never raw ISO."""
    ref = reference or now()
    at_utc, ref_utc = at.astimezone(UTC), ref.astimezone(UTC)
    when = at_utc.strftime("%H:%M UTC")
    if at_utc.date() != ref_utc.date():
        when = f"{at_utc.strftime('%b')} {at_utc.day} {when}"
    return f"{when} ({relative(at_utc, ref_utc)})"


def relative(at: datetime, reference: datetime | None = None) -> str:
    """``in 29 min`` / ``3 h ago`` / ``just now``: the distance from ``reference``, rounded."""
    seconds = (at - (reference or now())).total_seconds()
    size = abs(seconds)
    if size < 60:
        return "just now"
    for unit, span in (("day", 86400), ("h", 3600), ("min", 60)):
        if size >= span:
            count = round(size / span)
            label = f"{count} {unit}" + ("s" if unit == "day" and count != 1 else "")
            break
    return f"in {label}" if seconds > 0 else f"{label} ago"
