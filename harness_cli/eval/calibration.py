"""How well a stated confidence matches how often the work was right: the Brier score and the
expected calibration error, over (confidence in 0..1, correct) pairs. Both are 0 for a perfect
forecaster and lower is better: Brier is the mean squared gap between confidence and outcome
(1 or 0) — it mixes calibration and sharpness; ECE is the gap between the mean confidence and
the hit rate inside each confidence bin, weighted by the bin's share of the pairs."""

from __future__ import annotations

import math
from collections.abc import Sequence

BINS = 10
"""Equal-width bins over [0, 1] (the common choice; a 95 % claim falls in the top bin)."""


def brier(pairs: Sequence[tuple[float, bool]]) -> float | None:
    if not pairs:
        return None
    return round(sum((p - float(ok)) ** 2 for p, ok in pairs) / len(pairs), 6)


def ece(pairs: Sequence[tuple[float, bool]], bins: int = BINS) -> float | None:
    if not pairs:
        return None
    grouped: dict[int, list[tuple[float, bool]]] = {}
    for p, ok in pairs:
        grouped.setdefault(min(int(p * bins), bins - 1), []).append((p, ok))
    gap = 0.0
    for members in grouped.values():
        confidence = sum(p for p, _ in members) / len(members)
        rate = sum(1 for _, ok in members if ok) / len(members)
        gap += len(members) / len(pairs) * abs(confidence - rate)
    return round(gap, 6)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile (``q`` in 0..1): the smallest value with at least ``q`` of
    the values at or below it; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return float(ordered[max(0, math.ceil(q * len(ordered)) - 1)])
