"""harness gates REPORT.json [--previous PREV.json] [--review REVIEW.json] — the quality gates on
one completion report, and the decision they lead to.

stdout is always the verdict as JSON (CONTRACT §4: ``ceiling``, ``confidence``, ``violations``,
``decision``), compact with ``--json`` and indented without it, so scripts can parse either;
the one-line human summary goes to stderr. A report that fails gates exits 0 (the verdict is
the output); an unreadable file or one with no valid report exits 2 with one line.

``decision`` is one of: ``continue`` (another iteration, guard notes first), ``review`` (ready
for the adversarial and red-team reviews), ``exit_complete``, ``exit_blocked``,
``exit_stalled``, ``exit_degrading``, ``exit_timeout``. With ``--previous`` the history is that
report's own verdict, so G1 and the degrading drop apply; with ``--review`` the verdict is the
review's (P7, G5, D). Every code is documented in ``harness_cli/investigation/gates/table.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from harness_cli.commands import new_app
from harness_cli.errors import InputError
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.output import OPTIONS

app = new_app("Evaluate the quality gates on a completion report.")


@app.command()
def gates(
    report: Path = typer.Argument(
        ...,
        metavar="REPORT.json",
        help="The completion report: a JSON file, or model output containing the block.",
    ),
    previous: Path | None = typer.Option(
        None, "--previous", help="The previous iteration's report (G1, degrading drop)."
    ),
    review: Path | None = typer.Option(
        None, "--review", help="The adversarial review verdict, D1-D15 and red team (P7, G5)."
    ),
) -> None:
    """Evaluate the quality gates on a completion report and print the verdict."""
    from harness_cli.investigation.gates import evaluate
    from harness_cli.investigation.report import CompletionReport, extract_report
    from harness_cli.investigation.review import parse_review

    def load_report(path: Path) -> tuple[CompletionReport, str, tuple[str, ...]]:
        found = extract_report(_read(path))
        if found.report is None:
            raise InputError(f"{path}: {found.problems[0]}")
        return found.report, found.prose, found.problems

    current, prose, problems = load_report(report)
    before = load_report(previous)[0] if previous is not None else None
    verdict_of_review = None
    if review is not None:
        try:
            verdict_of_review = parse_review(_read(review))
        except ValueError as exc:
            raise InputError(f"{review}: not a review verdict: {exc}") from None

    verdict = evaluate(
        current, before, verdict_of_review, _thresholds(), prose=prose, problems=problems
    )
    body = verdict.to_json()
    text = (
        json.dumps(body, ensure_ascii=False)
        if OPTIONS.json
        else json.dumps(body, indent=2, ensure_ascii=False)
    )
    sys.stdout.write(text + "\n")
    decision = verdict.decision
    codes = ", ".join(verdict.codes) or "none"
    sys.stderr.write(
        f"gates: {body['decision']} — confidence {verdict.confidence}% (claimed "
        f"{verdict.claimed_confidence}%, ceiling {verdict.ceiling}%); violations: {codes}"
        + (f"; {decision.reason}" if decision else "")
        + "\n"
    )


def _thresholds() -> InvestigationThresholds:
    """harness.yaml's ``investigation:`` numbers when a config is there; the reference's
    otherwise (checking a report by hand needs no config)."""
    from harness_cli import paths
    from harness_cli.config import load_config

    if not (paths.config_dir() / "harness.yaml").exists():
        return InvestigationThresholds()
    return load_config().harness.investigation


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", hint="check the path") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({exc.__class__.__name__})") from None
