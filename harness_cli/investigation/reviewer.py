"""The two reviews of a finished investigation, each a separate model call in its own role,
each in its own staged folder (``staging.py``) — what a reviewer may see is what it is given,
not what it is asked to ignore.

- The adversarial reviewer (D1-D15) "doesn't see the investigator's prompt. It receives the
  analysis text and a checklist of 15 evaluation dimensions" — here the whole narrative.
- The red team (G5) "is shown only the original problem statement and the final conclusion
  [...] It gets no intermediate reasoning, no evidence trail and no earlier rounds."

Both must pass before a case is complete. A reviewer whose answer cannot be read counts as a
critical review with that reason: an unreadable verdict is not a pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from harness_cli import components
from harness_cli.investigation.review import DIMENSIONS, ReviewVerdict
from harness_cli.investigation.staging import (
    Narrative,
    hidden_paths,
    scrub,
    stage_adversarial,
    stage_red_team,
    staged,
)
from harness_cli.loop.jsonblocks import json_objects
from harness_cli.loop.report import CompletionReport


class IsolatedCall(Protocol):
    def isolated(self, role: str, prompt: str, workdir: Path) -> str: ...


@dataclass
class ReviewOutcome:
    verdict: ReviewVerdict
    raw: dict[str, Any]
    staged: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per reviewer, the files it was given (name → sha256): what it could see."""


ABLATED_ADVERSARIAL = json.dumps(
    {"dimensions": dict.fromkeys(DIMENSIONS, "PASS"), "severity": "none",
     "notes": ["adversarial_reviewer ablated by an eval trial: no review was run"]}
)  # fmt: skip
"""What an eval trial that ablates the adversarial reviewer puts in its place: a clean pass."""
ABLATED_RED_TEAM = json.dumps(
    {"hypothesis": "(red_team ablated by an eval trial)", "diverges": False}
)
"""… and for the red team: agreement."""


def conclusion_of(report: CompletionReport) -> str:
    conclusion = report.root_cause.summary if report.root_cause else ""
    return "\n\n".join(x for x in (conclusion, report.draft_response) if x)


def review(
    runner: IsolatedCall,
    *,
    render: Callable[..., str],
    ticket: str,
    narrative: Narrative,
    report: CompletionReport,
    case_dir: Path,
) -> ReviewOutcome:
    """Run both reviews, each in its own emptied folder, and merge them into one verdict."""
    hidden = hidden_paths(case_dir)
    dimensions = "\n".join(f"- {code}: {name}" for code, name in DIMENSIONS.items())
    with staged("adversarial-reviewer", case_dir) as stage:
        stage_adversarial(stage, narrative, hidden)
        prompt = render(
            "adversarial-reviewer",
            dimensions=dimensions,
            slate=scrub(narrative.slate, hidden),
            analysis=scrub(narrative.text(), hidden),
        )
        adversarial_text = (
            runner.isolated("adversarial-reviewer", prompt, stage.dir)
            if components.enabled("adversarial_reviewer")
            else ABLATED_ADVERSARIAL
        )
        adversarial_files = dict(stage.files)
    with staged("red-team", case_dir) as stage:
        conclusion = conclusion_of(report)
        stage_red_team(stage, ticket, conclusion, hidden)
        prompt = render(
            "red-team", ticket=scrub(ticket, hidden), conclusion=scrub(conclusion, hidden)
        )
        red_text = (
            runner.isolated("red-team", prompt, stage.dir)
            if components.enabled("red_team")
            else ABLATED_RED_TEAM
        )
        red_files = dict(stage.files)
    outcome = merge(adversarial_text, red_text)
    outcome.staged = {"adversarial-reviewer": adversarial_files, "red-team": red_files}
    return outcome


def merge(adversarial_text: str, red_text: str) -> ReviewOutcome:
    """The two answers as one verdict (REVIEW.json's shape); unreadable parts are critical."""
    adversarial = _last_with(adversarial_text, "dimensions")
    red = _last_with(red_text, "hypothesis")
    problems: list[str] = []
    if adversarial is None:
        problems.append("the adversarial reviewer gave no readable verdict")
        adversarial = {"dimensions": {d: "NA" for d in DIMENSIONS}, "severity": "critical"}
    if red is None:
        problems.append("the red team gave no readable hypothesis")
        red = {"hypothesis": "", "diverges": True, "note": "no readable answer"}
    merged = {**adversarial, "red_team": red}
    merged.setdefault("notes", [])
    try:
        verdict = ReviewVerdict.model_validate(merged)
    except ValidationError as exc:
        problems.append(f"the review verdict is invalid: {exc.errors()[0]['msg']}")
        merged = {
            "dimensions": {d: "NA" for d in DIMENSIONS},
            "severity": "critical",
            "red_team": red
            if isinstance(red.get("diverges"), bool)
            else {"hypothesis": "", "diverges": True},
            "notes": [],
        }
        verdict = ReviewVerdict.model_validate(merged)
    if problems:
        verdict = verdict.model_copy(
            update={"severity": "critical", "notes": [*verdict.notes, *problems]}
        )
        merged["severity"], merged["notes"] = "critical", verdict.notes
    return ReviewOutcome(verdict, merged)


def _last_with(text: str, key: str) -> dict[str, Any] | None:
    blocks = [b for b in json_objects(text) if key in b]
    return blocks[-1] if blocks else None
