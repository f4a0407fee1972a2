"""The last 24 hours in a few lines, for ``harness status`` and ``admin: oncall status``.

Read from what the harness already writes — logs/agent.log (and its rotated files), the case
registry, the state files — never from a separate metrics store: "Slack and grep serve as the
consoles" (reference, Layer 5), and this is grep done once.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from harness_cli import clock, paths
from harness_cli.cost.meter import totals
from harness_cli.errors import HarnessError
from harness_cli.intake import pause
from harness_cli.ops.mcp_watch import state_file
from harness_cli.state import files
from harness_cli.workspace import registry

WINDOW = timedelta(hours=24)
_EXIT = re.compile(r"exit=([a-z_]+)")
_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_tokens", "cache_read_tokens")
RUN_EVENTS = ("model_call", "dev_agent_run")
"""One model run each (investigation/review calls, dev-agent calls)."""


@dataclass
class Summary:
    since: str
    cases_by_status: dict[str, int] = field(default_factory=dict)
    """Every case in the registry, by status (not only the window's)."""
    cases_opened: int = 0
    runs: dict[str, int] = field(default_factory=dict)
    """Model runs in the window, by role."""
    spawns: int = 0
    dispatches: int = 0
    retries: int = 0
    """Model API retries plus push attempts that failed and were retried."""
    exits: dict[str, int] = field(default_factory=dict)
    escalations: dict[str, int] = field(default_factory=dict)
    notifications: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_TOKEN_FIELDS, 0))
    cost_usd: float = 0.0
    paused: bool = False
    held_back: int = 0
    paused_mrs: list[str] = field(default_factory=list)
    escalated_mrs: list[str] = field(default_factory=list)
    mcp_failing: list[str] = field(default_factory=list)
    log_lines_unreadable: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        total = sum(self.tokens.values())
        out = [
            "last 24 h: "
            + f"{self.cases_opened} case(s) opened; "
            + f"{sum(self.runs.values())} model run(s); "
            + f"dispatches {self.dispatches}, spawns {self.spawns}, retries {self.retries}; "
            + f"{total:,} tokens (${self.cost_usd:.2f})",
            "cases: " + (_pairs(self.cases_by_status) or "none"),
        ]
        if self.exits:
            out.append("exits: " + _pairs(self.exits))
        if self.escalations:
            out.append("escalations: " + _pairs(self.escalations))
        if self.errors:
            out.append(f"errors logged: {self.errors} (logs/error.log)")
        held = []
        if self.paused:
            held.append(f"dispatch paused ({self.held_back} held back)")
        if self.paused_mrs:
            held.append("MRs paused: " + ", ".join(self.paused_mrs))
        if self.escalated_mrs:
            held.append("MRs waiting for you: " + ", ".join(self.escalated_mrs))
        if self.mcp_failing:
            held.append("MCP failing: " + ", ".join(self.mcp_failing))
        if held:
            out.append("; ".join(held))
        return out


def _pairs(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def last_24h(now: datetime | None = None, window: timedelta = WINDOW) -> Summary:
    now = now or clock.now()
    since = now - window
    summary = Summary(since=since.isoformat())
    _from_logs(summary, since, now)
    _from_cost(summary, since, now)
    _from_registry(summary, since)
    _from_state(summary)
    return summary


def _from_logs(summary: Summary, since: datetime, now: datetime) -> None:
    runs: Counter[str] = Counter()
    exits: Counter[str] = Counter()
    escalations: Counter[str] = Counter()
    notified: Counter[str] = Counter()
    for entry in _entries(paths.logs_dir() / "agent.log", since, summary):
        name = str(entry.get("event", ""))
        if entry.get("level") in ("error", "critical") and not _operator_typo(entry):
            summary.errors += 1
        if name in RUN_EVENTS:
            runs[str(entry.get("role") or name)] += 1
        elif name == "spawn":
            summary.spawns += 1
        elif name == "dispatch":
            summary.dispatches += 1
        elif name in ("model_retry", "push_failed"):
            summary.retries += 1
        elif name == "investigation_exit":
            match = _EXIT.search(str(entry.get("line", "")))
            exits[match.group(1) if match else "unknown"] += 1
        elif name == "notified":
            notified[str(entry.get("kind", "?"))] += 1
        if "escalat" in name:
            escalations[name] += 1
    summary.runs, summary.exits = dict(runs), dict(exits)
    summary.escalations, summary.notifications = dict(escalations), dict(notified)


def _operator_typo(entry: dict[str, Any]) -> bool:
    """A command line the operator mistyped (an unknown case, a bad admin verb): told to them
    on the spot with exit 2, and no error of the harness's to count."""
    return entry.get("event") == "command_failed" and entry.get("error") == "InputError"


def _from_cost(summary: Summary, since: datetime, now: datetime) -> None:
    """Tokens and $ from the cost meter: every model call of every workflow, priced once."""

    t = totals(since=since, until=now + timedelta(seconds=1)).total
    summary.tokens = {
        "input_tokens": t.input,
        "output_tokens": t.output,
        "cache_creation_tokens": t.cache_write,
        "cache_read_tokens": t.cache_read,
    }
    summary.cost_usd = round(t.usd, 6)


def _entries(log: Path, since: datetime, summary: Summary) -> Iterator[dict[str, Any]]:
    """The window's entries of a rotated log (``agent.log``, ``agent.log.1``, …); files last
    written before the window are not opened."""
    rotated = sorted(log.parent.glob(log.name + ".*"), key=lambda p: p.name)
    for path in [log, *rotated]:
        try:
            if datetime.fromtimestamp(path.stat().st_mtime, since.tzinfo) < since:
                continue
            handle = path.open(encoding="utf-8", errors="replace")
        except OSError:
            continue
        with handle:
            for raw in handle:
                try:
                    entry = json.loads(raw)
                    at = clock.parse_instant(str(entry["ts"]), source=str(path))
                except (ValueError, KeyError, TypeError, HarnessError):
                    # a torn or foreign line: counted, never fatal to a status report
                    summary.log_lines_unreadable += 1
                    continue
                if isinstance(entry, dict) and at >= since:
                    yield entry


def _from_registry(summary: Summary, since: datetime) -> None:
    statuses: Counter[str] = Counter()
    for case in registry.list_cases():
        statuses[str(case.get("status") or "?")] += 1
        created = case.get("created_at")
        if created and clock.parse_instant(str(created), source="case.json") >= since:
            summary.cases_opened += 1
    summary.cases_by_status = dict(statuses)


def _from_state(summary: Summary) -> None:
    view = pause.view()
    summary.paused, summary.held_back = view.paused, view.held_back_total
    mrs = files.monitored_mrs().read().mrs
    summary.paused_mrs = sorted(k for k, m in mrs.items() if m.paused and not m.escalated)
    summary.escalated_mrs = sorted(k for k, m in mrs.items() if m.escalated)
    servers = state_file().read().servers
    summary.mcp_failing = sorted(n for n, h in servers.items() if h.failures > 0)
