"""The interval arithmetic of an eval: a pass rate's Wilson score interval, and the paired
difference of two variants run on the same cases and seeds (Newcombe's method 10).

003's rule 5: "Rapportez la moyenne ainsi que la dispersion ou l'intervalle de confiance."
Wilson rather than the normal approximation: it stays inside [0, 1] and is honest at 0/n and
n/n, which small eval suites hit all the time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
"""The two-sided 95 % normal quantile."""


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes``/``n``; (0, 1) when nothing was run.
    ``successes`` may be fractional: cases as the unit, a stochastic case adding its rate."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= n:
        raise ValueError(f"{successes} successes out of {n}")
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class PairedDelta:
    """treatment − control on paired binary outcomes, with its 95 % interval."""

    n: int
    control: float
    treatment: float
    delta: float
    low: float
    high: float
    only_control: int
    """Pairs where only the control passed (b)."""
    only_treatment: int
    """Pairs where only the treatment passed (c)."""


def paired_delta(pairs: Sequence[tuple[bool, bool]], z: float = Z95) -> PairedDelta:
    """Newcombe (1998), method 10: the difference of two paired proportions from the Wilson
    intervals of each margin and the phi correlation of the 2×2 table. Each pair is
    (control passed, treatment passed) for one case and seed."""
    n = len(pairs)
    if n == 0:
        return PairedDelta(0, 0.0, 0.0, 0.0, -1.0, 1.0, 0, 0)
    a = sum(1 for c, t in pairs if c and t)
    b = sum(1 for c, t in pairs if c and not t)
    c_ = sum(1 for c, t in pairs if not c and t)
    d = n - a - b - c_
    p1, p2 = (a + c_) / n, (a + b) / n  # treatment, control
    l1, u1 = wilson(a + c_, n, z)
    l2, u2 = wilson(a + b, n, z)
    denominator = (a + b) * (c_ + d) * (a + c_) * (b + d)
    phi = (a * d - b * c_) / math.sqrt(denominator) if denominator else 0.0
    theta = p1 - p2
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return PairedDelta(n, p2, p1, theta, max(-1.0, theta - dl), min(1.0, theta + du), b, c_)
