"""How an ending is told: the exit line and the confidence trajectory (sparkline).

“Whichever one fires is logged and shown to the operator, as in lines like these:
``exit=complete       confidence=89%  iterations=12  elapsed=13min``.” The harness's sixth
exit, ``failed`` (the run could not investigate), uses the same shape with its cause as the
note: ``exit=failed         confidence=0%   iterations=0   elapsed=0min    (model auth: …)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from harness_cli.loop.verdict import Verdict

REVIEW_MARK = " (review)"


def exit_line(
    reason: str,
    confidence: int,
    iterations: int,
    elapsed_seconds: float,
    note: str | None = None,
) -> str:
    """The reference's shape, columns at 0, 20, 36, 51 and 67:
    ``exit=complete       confidence=89%  iterations=12  elapsed=13min``."""
    minutes = max(0, round(elapsed_seconds / 60))
    cells = [
        _cell(f"exit={reason}", 20),
        _cell(f"confidence={confidence}%", 16),
        _cell(f"iterations={iterations}", 15),
    ]
    elapsed = f"elapsed={minutes}min"
    if not note:
        return "".join(cells) + elapsed
    return "".join(cells) + _cell(elapsed, 16) + f"({' '.join(note.split())})"


def _cell(text: str, width: int) -> str:
    return text.ljust(width) if len(text) < width else text + " "


@dataclass(frozen=True)
class Point:
    """One number of the trajectory: an iteration's, or the lower one its review left."""

    iteration: int
    confidence: int
    review: bool = False


def points(history: Sequence[Verdict]) -> list[Point]:
    """Every iteration with a report, and after it the number its review lowered it to (a
    review that left the number alone adds nothing): the sparkline ends where the exit line's
    confidence is."""
    out: list[Point] = []
    n = 0
    for v in history:
        if v.review is None:
            n += 1
            if v.report_ok:
                out.append(Point(n, v.confidence))
        elif v.report_ok and out and v.confidence != out[-1].confidence:
            out.append(Point(n, v.confidence, review=True))
    return out


def trajectory(history: Sequence[Verdict]) -> str:
    """The confidence sparkline of ANALYSIS.md: ``45% → 62% → 78%``; a number a review set
    is marked: ``90% → 65% (review) → 88%``."""
    return " → ".join(f"{p.confidence}%{REVIEW_MARK if p.review else ''}" for p in points(history))
