"""What every gate function receives, and the one way to build a violation (its effect comes
from the table, so a code's effect is stated once)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from harness_cli.investigation.gates.table import GATES
from harness_cli.investigation.review import ReviewVerdict
from harness_cli.investigation.thresholds import DEFAULT_THRESHOLDS, InvestigationThresholds
from harness_cli.loop.evidence import ToolUse
from harness_cli.loop.report import CompletionReport
from harness_cli.loop.verdict import Violation


@dataclass(frozen=True)
class GateInput:
    report: CompletionReport
    previous: CompletionReport | None = None
    """The previous iteration's report (G1 compares against it)."""
    review: ReviewVerdict | None = None
    thresholds: InvestigationThresholds = DEFAULT_THRESHOLDS
    prose: str = ""
    """The model's text around the block (G2 reads it)."""
    baseline: int | None = None
    """The harness's own confidence before this round (the last verdict with a report, a
    review's lowered number included): G1 holds the new number there."""
    tools: tuple[ToolUse, ...] | None = None
    """Every tool call of this investigation run so far, as the runtime reported it (G4);
    None when unknown (a report checked by hand), and G4 then falls back to the wording."""
    catalog: tuple[str, ...] = ()
    """The MCP servers the run could reach (EQ1: a HARD citation of one never answered is
    read as INFERRED; G4: one never queried is still reachable)."""


Gate = Callable[[GateInput], Violation | None]


def violation(code: str, message: str) -> Violation:
    return Violation(code, message, GATES[code].effect)


def short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def listing(items: Iterable[str], limit: int = 3) -> str:
    """``"a", "b", "c" and 2 more``: enough for the model to find each one."""
    items = list(items)
    shown = ", ".join(f"“{short(i, 60)}”" for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
