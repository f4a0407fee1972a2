"""Logs and metrics of the sandbox's world, derived from the incident's orders (``incident``).

Logs: one line per event, ``<timestamp> <service> <LEVEL> <message>``, searchable by service,
time range, level and text (every word must appear, case-insensitive). Metrics: counts per
15-minute bucket, re-aggregated to the step asked for (sum for counts, max for latencies).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from harness_cli.sandbox.world.incident import (
    DEPLOY_AT,
    NOW,
    REDIS_BURST,
    START,
    THRESHOLD,
    deploys,
    orders,
    stamp,
    when,
)

__all__ = ["METRICS", "SERVICES", "LogLine", "log_lines", "query_metric", "search_logs"]

SERVICES = ("pricing-service", "checkout-api", "deploy-bot")
BUCKET = timedelta(minutes=15)
MAX_LIMIT = 1000


@dataclass(frozen=True)
class LogLine:
    at: datetime
    service: str
    level: str
    message: str

    def render(self) -> str:
        return f"{stamp(self.at)} {self.service} {self.level} {self.message}"


@cache
def log_lines() -> tuple[LogLine, ...]:
    lines: list[LogLine] = []
    for o in orders():
        lines.append(
            LogLine(
                o.placed_at,
                "checkout-api",
                "INFO",
                f"order placed order={o.id} customer={o.customer} lines=1 "
                f"quoted_total={o.quoted_total}",
            )
        )
        lines.append(
            LogLine(
                o.placed_at + timedelta(milliseconds=84),
                "pricing-service",
                "INFO",
                f"price_line order={o.id} sku={o.sku} qty={o.quantity} unit={o.unit_price} "
                f"discount={o.discount} total={o.total} threshold={THRESHOLD}",
            )
        )
        if o.total != o.quoted_total:
            lines.append(
                LogLine(
                    o.placed_at + timedelta(milliseconds=131),
                    "checkout-api",
                    "WARN",
                    f"price mismatch order={o.id} quoted={o.quoted_total} charged={o.total} "
                    f"qty={o.quantity}: charging the pricing-service total",
                )
            )
    for deploy in deploys():
        at = when(deploy["deployed_at"], NOW)
        lines.append(
            LogLine(
                at,
                "deploy-bot",
                "INFO",
                f"deployed {deploy['service']} {deploy['version']} commit={deploy['commit_sha']} "
                f"ticket={deploy['ticket']} by={deploy['author']}",
            )
        )
    at = START
    while at < NOW:  # hourly health checks: noise every search has to wade through
        for service in ("pricing-service", "checkout-api"):
            lines.append(LogLine(at, service, "INFO", "healthcheck ok status=200 latency_ms=3"))
        at += timedelta(hours=1)
    minute = REDIS_BURST[0]
    while minute < REDIS_BURST[1]:  # the red herring: unrelated, loud, and over by 14:20
        lines.append(
            LogLine(
                minute + timedelta(seconds=17),
                "checkout-api",
                "ERROR",
                "redis timeout op=GET key=session:* after 2000ms (pool exhausted)",
            )
        )
        minute += timedelta(minutes=2)
    lines.append(
        LogLine(
            DEPLOY_AT + timedelta(seconds=40),
            "pricing-service",
            "INFO",
            "config loaded BULK_THRESHOLD=10 BULK_RATE=0.10 version=v2.3.0",
        )
    )
    return tuple(sorted(lines, key=lambda line: (line.at, line.service)))


def search_logs(
    service: str | None = None,
    query: str | None = None,
    start: str | None = None,
    end: str | None = None,
    level: str | None = None,
    limit: int = 100,
    lines: tuple[LogLine, ...] | None = None,
    services: tuple[str, ...] = SERVICES,
) -> dict[str, Any]:
    """Matching lines, oldest first, at most ``limit`` (≤ 1000); ``truncated`` says if more.
    ``lines``/``services``: a seeded incident's own (``seeded``) instead of the default's."""
    if service and service not in services:
        raise ValueError(f"unknown service {service!r}: one of {', '.join(services)}")
    since, until = when(start, START), when(end, NOW)
    words = (query or "").lower().split()
    limit = max(1, min(int(limit), MAX_LIMIT))
    found = [
        line
        for line in (log_lines() if lines is None else lines)
        if since <= line.at <= until
        and (not service or line.service == service)
        and (not level or line.level == level.upper())
        and all(w in line.render().lower() for w in words)
    ]
    return {
        "service": service or "*",
        "from": stamp(since),
        "to": stamp(until),
        "total": len(found),
        "truncated": len(found) > limit,
        "lines": [line.render() for line in found[:limit]],
    }


METRICS: dict[str, tuple[str, str, str]] = {
    "pricing.bulk_discount.applied": ("pricing-service", "count", "order lines given the discount"),
    "pricing.order_lines.bulk_eligible": (
        "pricing-service",
        "count",
        f"order lines of {THRESHOLD} units or more",
    ),
    "pricing.order_lines.total": ("pricing-service", "count", "order lines priced"),
    "checkout.price_mismatch": ("checkout-api", "count", "orders charged other than quoted"),
    "checkout.redis.timeouts": ("checkout-api", "count", "Redis calls that timed out"),
    "http.request.latency_p95_ms": ("*", "max", "p95 latency of the service's HTTP requests"),
}
"""Metric → (service, aggregation, what it counts)."""


@cache
def _buckets() -> dict[tuple[str, str], dict[datetime, float]]:
    series: dict[tuple[str, str], dict[datetime, float]] = {}

    def add(metric: str, service: str, at: datetime, value: float, how: str = "sum") -> None:
        slot = START + ((at - START) // BUCKET) * BUCKET
        points = series.setdefault((metric, service), {})
        points[slot] = (
            max(points.get(slot, 0.0), value) if how == "max" else (points.get(slot, 0.0) + value)
        )

    at = START
    while at < NOW:
        for metric in METRICS:
            if METRICS[metric][0] != "*":
                add(metric, METRICS[metric][0], at, 0.0)
        for service, base in (("pricing-service", 18.0), ("checkout-api", 42.0)):
            add("http.request.latency_p95_ms", service, at, base, "max")
        at += BUCKET
    for o in orders():
        add("pricing.order_lines.total", "pricing-service", o.placed_at, 1)
        add(
            "pricing.order_lines.bulk_eligible",
            "pricing-service",
            o.placed_at,
            float(o.quantity >= THRESHOLD),
        )
        add("pricing.bulk_discount.applied", "pricing-service", o.placed_at, float(o.discount > 0))
        add(
            "checkout.price_mismatch", "checkout-api", o.placed_at, float(o.total != o.quoted_total)
        )
    minute = REDIS_BURST[0]
    while minute < REDIS_BURST[1]:
        add("checkout.redis.timeouts", "checkout-api", minute, 37)
        add("http.request.latency_p95_ms", "checkout-api", minute, 2140.0, "max")
        minute += timedelta(minutes=2)
    return series


def query_metric(
    metric: str,
    service: str | None = None,
    start: str | None = None,
    end: str | None = None,
    step: str = "1h",
    metrics: dict[str, tuple[str, str, str]] | None = None,
    buckets: dict[tuple[str, str], dict[datetime, float]] | None = None,
) -> dict[str, Any]:
    """One time series: ``points`` are ``[timestamp, value]`` per ``step`` (15m, 1h, 6h, 1d).
    ``metrics``/``buckets``: a seeded incident's own (``seeded``) instead of the default's."""
    metrics = METRICS if metrics is None else metrics
    if metric not in metrics:
        raise ValueError(f"unknown metric {metric!r}: one of {', '.join(metrics)}")
    owner, how, _ = metrics[metric]
    chosen = service or (owner if owner != "*" else "")
    if not chosen or (owner != "*" and chosen != owner):
        wanted = "a service: pricing-service or checkout-api" if owner == "*" else owner
        raise ValueError(f"{metric} is reported by {wanted}, not {service!r}")
    steps = {"15m": 1, "1h": 4, "6h": 24, "1d": 96}
    if step not in steps:
        raise ValueError(f"step must be one of {', '.join(steps)}")
    since, until = when(start, START), when(end, NOW)
    raw = (_buckets() if buckets is None else buckets).get((metric, chosen), {})
    width = BUCKET * steps[step]
    grouped: dict[datetime, float] = {}
    for slot, value in sorted(raw.items()):
        if since <= slot < until:
            key = START + ((slot - START) // width) * width
            grouped[key] = (
                max(grouped.get(key, 0.0), value)
                if how == "max"
                else (grouped.get(key, 0.0) + value)
            )
    return {
        "metric": metric,
        "service": chosen,
        "aggregation": how,
        "step": step,
        "points": [[stamp(k), v] for k, v in sorted(grouped.items())],
    }
