"""harness gates REPORT.json [--previous PREV.json] [--review REVIEW.json] — the quality gates on
one completion report, and the decision they lead to.

stdout is always the verdict as JSON (CONTRACT §4: ``ceiling``, ``confidence``, ``violations``,
``decision``), compact with ``--json`` and indented without it, so scripts can parse either;
the one-line human summary goes to stderr. A report that fails gates exits 0 (the verdict is
the output); an unreadable file or one with no valid report exits 2 with one line.

``decision`` is one of: ``continue`` (another iteration, guard notes first), ``review`` (ready
for the adversarial and red-team reviews), ``exit_complete``, ``exit_blocked``,
``exit_stalled``, ``exit_degrading``, ``exit_timeout``, ``exit_failed`` (the harness's sixth
exit: the run could not investigate; the loop decides it, a single report rarely does). With
``--previous`` (repeatable, oldest first) the history is those reports' own verdicts, so G1,
stalled and degrading apply (degrading needs two drops in a row: two earlier reports); with
``--review`` the verdict is the review's (P7, G5, D). A report checked here comes without the
run's tool calls, so G4 falls back to the wording of each ``access_status``. Every code is
documented in ``harness_cli/investigation/gates/table.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from harness_cli import paths
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.errors import InputError
from harness_cli.investigation.gates import evaluate
from harness_cli.investigation.review import parse_review
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.loop.report import CompletionReport, extract_report
from harness_cli.loop.verdict import Verdict
from harness_cli.output import OPTIONS

app = new_app("Evaluate the quality gates on a completion report.")


@app.command()
def gates(
    report: Path = typer.Argument(
        ...,
        metavar="REPORT.json",
        help="The completion report: a JSON file, or model output containing the block.",
    ),
    previous: list[Path] = typer.Option(
        [],
        "--previous",
        metavar="PREV.json",
        help="An earlier iteration's report (G1, stalled, degrading); repeat it for several, "
        "oldest first.",
    ),
    review: Path | None = typer.Option(
        None, "--review", help="The adversarial review verdict, D1-D15 and red team (P7, G5)."
    ),
) -> None:
    """Evaluate the quality gates on a completion report and print the verdict."""

    def load_report(path: Path) -> tuple[CompletionReport, str, tuple[str, ...]]:
        found = extract_report(_read(path))
        if found.report is None:
            raise InputError(f"{path}: {found.problems[0]}")
        return found.report, found.prose, found.problems

    current, prose, problems = load_report(report)
    history: list[Verdict] = []
    before: CompletionReport | None = None
    for path in previous:
        earlier, earlier_prose, earlier_problems = load_report(path)
        history.append(
            evaluate(
                earlier,
                before,
                None,
                _thresholds(),
                prose=earlier_prose,
                problems=earlier_problems,
                history=list(history),
            )
        )
        before = earlier
    verdict_of_review = None
    if review is not None:
        try:
            verdict_of_review = parse_review(_read(review))
        except ValueError as exc:
            raise InputError(f"{review}: not a review verdict: {exc}") from None

    if verdict_of_review is not None:
        history.append(
            evaluate(
                current,
                before,
                None,
                _thresholds(),
                prose=prose,
                problems=problems,
                history=list(history),
            )
        )
    verdict = evaluate(
        current, before, verdict_of_review, _thresholds(),
        prose=prose, problems=problems, history=history,
    )  # fmt: skip
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
