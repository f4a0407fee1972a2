"""The default scenario's incident, told the same way by every source of the sandbox's world.

acme/pricing-service's bulk discount is "10 % off from 10 units on". On 2026-03-02 09:14 UTC
v2.3.0 shipped AAA-87 ("refactor: name the bulk threshold", commit 4f2a9c1), which turned
``quantity >= 10`` into ``quantity > BULK_THRESHOLD``: since then an order line of exactly 10
units is charged in full. Nothing errors. What there is to find:

- logs: pricing-service's ``price_line … qty=10 … discount=0.00`` after the deploy (``5.00``
  before), checkout-api's ``WARN price mismatch`` (the storefront quoted the discounted price),
  deploy-bot's deploy line; a checkout-api Redis timeout burst on 03-03 14:00 is a red herring.
- metrics: ``pricing.bulk_discount.applied`` falls by the share of 10-unit lines at the deploy
  while ``pricing.order_lines.bulk_eligible`` does not; ``checkout.price_mismatch`` rises from 0.
- tracker: AAA-101 (the customer's report), AAA-87 (the refactor, Done), AAA-64 (an older
  rounding incident), AAA-102 (the Redis red herring).
- docs: the pricing runbook (the rule, inclusive), the v2.3.0 release notes, the AAA-64
  postmortem ("test every boundary"), the checkout Redis runbook.
- database: orders and lines (10-unit lines with discount 0 after the deploy), the deploys
  table, the pricing rule (threshold 10, inclusive).

Everything is generated from one seeded list of orders, so the sources agree line for line.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from functools import cache

__all__ = [
    "DEPLOY_AT",
    "NOW",
    "START",
    "Order",
    "deploys",
    "first_mismatch",
    "orders",
    "stamp",
    "when",
]

START = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)
NOW = datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
"""The world's "now": the end of every time series and log (relative ranges count back from it)."""
DEPLOY_AT = datetime(2026, 3, 2, 9, 14, tzinfo=UTC)
REDIS_BURST = (datetime(2026, 3, 3, 14, 0, tzinfo=UTC), datetime(2026, 3, 3, 14, 20, tzinfo=UTC))
THRESHOLD = 10
RATE = Decimal("0.10")
CENT = Decimal("0.01")
_SKUS = {"SKU-PEN-01": "5.00", "SKU-PAD-02": "2.50", "SKU-INK-03": "1.99", "SKU-BOX-04": "12.40"}
_CUSTOMERS = ["acme-retail", "globex", "initech", "umbrella", "hooli", "stark-supply"]
_QUANTITIES = [3, 10, 12, 1, 10, 25, 9, 10, 5, 15, 2, 11]


@dataclass(frozen=True)
class Order:
    id: str
    placed_at: datetime
    customer: str
    sku: str
    quantity: int
    unit_price: Decimal
    discount: Decimal
    """What pricing-service charged off."""
    quoted_discount: Decimal
    """What the storefront showed (it applies the documented rule)."""

    @property
    def subtotal(self) -> Decimal:
        return self.unit_price * self.quantity

    @property
    def total(self) -> Decimal:
        return (self.subtotal - self.discount).quantize(CENT)

    @property
    def quoted_total(self) -> Decimal:
        return (self.subtotal - self.quoted_discount).quantize(CENT)


def _discount(subtotal: Decimal, eligible: bool) -> Decimal:
    return (subtotal * RATE).quantize(CENT, rounding=ROUND_HALF_UP) if eligible else Decimal("0.00")


@cache
def orders() -> tuple[Order, ...]:
    """One order line every 20 minutes (± a few), 2026-03-01 → NOW; seeded, so stable."""
    rng = random.Random(20260302)
    out: list[Order] = []
    at = START + timedelta(minutes=7)
    n = 0
    while at < NOW:
        n += 1
        sku = rng.choice(sorted(_SKUS))
        quantity = _QUANTITIES[n % len(_QUANTITIES)]
        unit = Decimal(_SKUS[sku])
        subtotal = unit * quantity
        charged = quantity > THRESHOLD if at >= DEPLOY_AT else quantity >= THRESHOLD
        out.append(
            Order(
                id=f"ORD-{at:%Y%m%d}-{n:04d}",
                placed_at=at,
                customer=rng.choice(_CUSTOMERS),
                sku=sku,
                quantity=quantity,
                unit_price=unit,
                discount=_discount(subtotal, charged),
                quoted_discount=_discount(subtotal, quantity >= THRESHOLD),
            )
        )
        at += timedelta(minutes=20 + rng.randint(-4, 4), seconds=rng.randint(0, 59))
    return tuple(out)


def deploys() -> list[dict[str, str]]:
    return [
        {
            "service": "pricing-service",
            "version": "v2.2.4",
            "commit_sha": "9b1e07d",
            "deployed_at": "2026-02-24T15:02:00Z",
            "ticket": "AAA-79",
            "author": "dana",
        },
        {
            "service": "checkout-api",
            "version": "v5.8.0",
            "commit_sha": "c33a810",
            "deployed_at": "2026-02-27T10:40:00Z",
            "ticket": "AAA-83",
            "author": "lee",
        },
        {
            "service": "pricing-service",
            "version": "v2.3.0",
            "commit_sha": "4f2a9c1",
            "deployed_at": DEPLOY_AT.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ticket": "AAA-87",
            "author": "alex",
        },
    ]


def first_mismatch() -> Order:
    """The first order the bug touched (the tracker and the docs cite it)."""
    return next(o for o in orders() if o.discount != o.quoted_discount)


def when(text: str | None, default: datetime) -> datetime:
    """An ISO-8601 time, or a relative one counted back from NOW: ``-2h``, ``-3d``, ``-30m``,
    ``now``. Raises ValueError with the accepted forms."""
    if text is None or not text.strip():
        return default
    raw = text.strip().lower()
    if raw == "now":
        return NOW
    units = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    if raw.startswith("now"):
        raw = raw[3:]
    if raw[:1] == "-" and raw[-1:] in units and raw[1:-1].isdigit():
        return NOW - timedelta(**{units[raw[-1]]: int(raw[1:-1])})
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"cannot read the time {text!r}: use ISO-8601 (2026-03-02T09:00:00Z) or a relative "
            "time like -2h, -3d, -30m, now"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
