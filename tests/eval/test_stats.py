"""The interval arithmetic: Wilson's score interval for a pass rate, Newcombe's paired
interval for an ablation's delta — fixed values, edge cases, and coverage of a known rate."""

from __future__ import annotations

import random

import pytest

from harness_cli.eval.stats import paired_delta, wilson


def test_wilson_values_and_edges() -> None:
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)  # nothing run: nothing known
    with pytest.raises(ValueError):
        wilson(11, 10)


def test_wilson_covers_a_known_rate_about_95_percent_of_the_time() -> None:
    rng = random.Random(7)
    for p, n in ((0.7, 20), (0.1, 30), (0.5, 12)):
        hits = 0
        for _ in range(800):
            k = sum(rng.random() < p for _ in range(n))
            low, high = wilson(k, n)
            hits += low <= p <= high
        assert 0.92 <= hits / 800 <= 0.99, (p, n, hits)


def test_paired_delta_edges() -> None:
    same = paired_delta([(True, True)] * 8 + [(False, False)] * 4)
    assert same.delta == 0 and same.low < 0 < same.high
    gain = paired_delta([(False, True)] * 10)
    assert gain.delta == 1 and gain.high == 1 and gain.low > 0.5
    loss = paired_delta([(True, False)] * 3 + [(True, True)] * 7)
    assert loss.delta == pytest.approx(-0.3) and loss.high < 0.05
    assert (loss.only_control, loss.only_treatment) == (3, 0)
    empty = paired_delta([])
    assert (empty.n, empty.low, empty.high) == (0, -1.0, 1.0)


def test_paired_delta_covers_a_known_difference() -> None:
    """Pairs drawn with control rate 0.5 and treatment rate 0.8, correlated: the interval
    covers the true difference 0.3 about 95 % of the time."""
    rng = random.Random(11)
    hits = 0
    for _ in range(600):
        pairs = []
        for _ in range(30):
            u = rng.random()
            pairs.append((u < 0.5, u < 0.8 if rng.random() < 0.7 else rng.random() < 0.8))
        d = paired_delta(pairs)
        hits += d.low <= 0.3 <= d.high
    assert 0.91 <= hits / 600 <= 0.99, hits
