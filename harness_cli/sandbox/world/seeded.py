"""A seeded world state: another incident told by the same servers, for the incident benchmark
(``harness_cli/eval/incidents``). When the world folder holds ``incident.json``, the logs,
metrics and docs servers serve its lines, series and documents instead of the default
scenario's (the tracker is the Jira emulator: its issues are seeded there, the database keeps
the default scenario). The file is read again whenever it changes, so one running host serves
one incident after another.

``incident.json``: ``{"id", "services": [..], "logs": [[iso, service, LEVEL, message], ..],
"metrics": {name: {"service", "aggregation": "sum"|"max", "description", "points": [[iso,
value], ..]}}, "docs": {id: {"title", "kind", "updated", "body"}}}`` — explicit data, already
expanded (the benchmark's generators run on its side, not in the server).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from harness_cli.sandbox.world import knowledge, telemetry
from harness_cli.sandbox.world.incident import NOW, START, when
from harness_cli.sandbox.world.telemetry import BUCKET, LogLine

__all__ = [
    "SEED_FILE",
    "Seeded",
    "get_doc",
    "list_metrics",
    "list_services",
    "load",
    "query_metric",
    "search_docs",
    "search_logs",
]

SEED_FILE = "incident.json"


@dataclass(frozen=True)
class Seeded:
    id: str
    services: tuple[str, ...]
    lines: tuple[LogLine, ...]
    metrics: dict[str, tuple[str, str, str]]
    buckets: dict[tuple[str, str], dict[datetime, float]]
    docs: dict[str, dict[str, str]]


_cache: dict[Path, tuple[tuple[int, int], Seeded]] = {}
_lock = threading.Lock()


def load(root: Path) -> Seeded | None:
    """The incident seeded in ``root``, or None (the default scenario)."""
    path = root / SEED_FILE
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    key = (stat.st_mtime_ns, stat.st_size)
    with _lock:
        hit = _cache.get(path)
        if hit is not None and hit[0] == key:
            return hit[1]
    seeded = parse(json.loads(path.read_text(encoding="utf-8")))
    with _lock:
        _cache[path] = (key, seeded)
    return seeded


def parse(data: dict[str, Any]) -> Seeded:
    lines = tuple(
        sorted(
            (
                LogLine(when(at, NOW), service, level.upper(), message)
                for at, service, level, message in data.get("logs", [])
            ),
            key=lambda line: (line.at, line.service),
        )
    )
    metrics: dict[str, tuple[str, str, str]] = {}
    buckets: dict[tuple[str, str], dict[datetime, float]] = {}
    for name, series in data.get("metrics", {}).items():
        service, how = str(series["service"]), str(series.get("aggregation", "sum"))
        metrics[name] = (service, how, str(series.get("description", "")))
        points = buckets.setdefault((name, service), {})
        for at, value in series.get("points", []):
            moment = when(at, NOW)
            slot = START + ((moment - START) // BUCKET) * BUCKET
            old = points.get(slot, 0.0)
            points[slot] = max(old, float(value)) if how == "max" else old + float(value)
    services = tuple(data.get("services") or sorted({line.service for line in lines}))
    return Seeded(
        str(data.get("id", "")), services, lines, metrics, buckets, dict(data.get("docs", {}))
    )


def search_logs(
    root: Path,
    service: str | None = None,
    query: str | None = None,
    start: str | None = None,
    end: str | None = None,
    level: str | None = None,
    limit: int = 100,
) -> dict[str, Any]:
    seeded = load(root)
    if seeded is None:
        return telemetry.search_logs(service, query, start, end, level, limit)
    return telemetry.search_logs(
        service, query, start, end, level, limit, lines=seeded.lines, services=seeded.services
    )


def list_services(root: Path) -> dict[str, Any]:
    seeded = load(root)
    return {"services": list(telemetry.SERVICES if seeded is None else seeded.services)}


def query_metric(
    root: Path,
    metric: str,
    service: str | None = None,
    start: str | None = None,
    end: str | None = None,
    step: str = "1h",
) -> dict[str, Any]:
    seeded = load(root)
    if seeded is None:
        return telemetry.query_metric(metric, service, start, end, step)
    return telemetry.query_metric(
        metric, service, start, end, step, metrics=seeded.metrics, buckets=seeded.buckets
    )


def list_metrics(root: Path) -> dict[str, Any]:
    seeded = load(root)
    table = telemetry.METRICS if seeded is None else seeded.metrics
    return {
        "metrics": [
            {"metric": m, "service": s, "aggregation": a, "description": d}
            for m, (s, a, d) in table.items()
        ]
    }


def search_docs(root: Path, query: str, limit: int = 5) -> dict[str, Any]:
    seeded = load(root)
    return knowledge.search_docs(query, limit, None if seeded is None else seeded.docs)


def get_doc(root: Path, doc_id: str) -> dict[str, Any]:
    seeded = load(root)
    return knowledge.get_doc(doc_id, None if seeded is None else seeded.docs)
