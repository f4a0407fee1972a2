"""The incident benchmark's table: one row per investigator, then each other investigator
against the first (the baseline of the run: the reference investigator), and the cases one
line each. Markdown, so the same text prints in a terminal and reads in a file."""

from __future__ import annotations

from collections.abc import Sequence

from harness_cli.eval.incidents.grade import BINS, CaseResult, Summary

__all__ = ["cases_table", "comparison", "summary_table"]

HEADER = (
    "| investigator | pass | root cause | evidence | exit | $/case | tokens/case | p50 s | p95 s "
    "| mean conf. | Brier | ECE |"
)


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def summary_table(rows: Sequence[Summary]) -> str:
    lines = [HEADER, "|" + " --- |" * 12]
    for s in rows:
        lines.append(
            f"| {s.investigator} | {_pct(s.passed, s.cases)} | {_pct(s.root_cause, s.cases)} "
            f"| {_pct(s.evidence, s.cases)} | {_pct(s.exit, s.cases)} | {s.usd_per_case:.4f} "
            f"| {s.tokens_per_case:,.0f} | {_num(s.p50_s, 1)} | {_num(s.p95_s, 1)} "
            f"| {s.mean_confidence:.0%} | {_num(s.brier)} | {_num(s.ece)} |"
        )
    return "\n".join(lines)


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}×" if a is not None and b else "n/a"


def _diff(a: float | None, b: float | None) -> str:
    return f"{a - b:+.3f}" if a is not None and b is not None else "n/a"


def comparison(rows: Sequence[Summary]) -> list[str]:
    """Each investigator after the first against it: differences of rates (percentage
    points) and calibration, ratios of cost and latency."""
    if len(rows) < 2:
        return []
    base = rows[0]
    out = []
    for s in rows[1:]:
        out.append(
            f"{s.investigator} vs {base.investigator}: pass "
            f"{(s.pass_rate - base.pass_rate) * 100:+.0f} pp, root cause "
            f"{(s.root_cause - base.root_cause) / max(1, s.cases) * 100:+.0f} pp, evidence "
            f"{(s.evidence - base.evidence) / max(1, s.cases) * 100:+.0f} pp, exit "
            f"{(s.exit - base.exit) / max(1, s.cases) * 100:+.0f} pp; $/case "
            f"{_ratio(s.usd_per_case, base.usd_per_case)}, p50 {_ratio(s.p50_s, base.p50_s)}, "
            f"p95 {_ratio(s.p95_s, base.p95_s)}; Brier {_diff(s.brier, base.brier)}, "
            f"ECE {_diff(s.ece, base.ece)}"
        )
    return out


def calibration_note() -> str:
    return (
        f"Calibration: the harness's final confidence (the exit line's) against the root cause "
        f"being right. Brier = mean((p − y)²), 0 is perfect, 0.25 is a constant 50 %; ECE over "
        f"{BINS} equal-width bins of p = Σ (cases in bin / all) · |right share − mean p|."
    )


def cases_table(results: Sequence[CaseResult]) -> str:
    lines = ["| incident | investigator | exit (right) | conf. | root cause | evidence | $ | s |",
             "|" + " --- |" * 8]  # fmt: skip
    for r in results:
        conf = "-" if r.confidence is None else f"{r.confidence:.0%}"
        evidence = "ok" if r.evidence.ok else (r.evidence.missing + r.evidence.unbacked)[0][:70]
        lines.append(
            f"| {r.incident} | {r.investigator} | {r.exit} ({r.expected_exit}) | {conf} "
            f"| {'ok' if r.root_cause_ok else 'wrong'} | {evidence} | {r.usd:.4f} "
            f"| {r.seconds:.1f} |"
        )
    return "\n".join(lines)
