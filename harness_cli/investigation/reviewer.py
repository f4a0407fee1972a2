"""The two reviews of a finished investigation, each a separate model call in its own role.

- The adversarial reviewer (D1-D15) "doesn't see the investigator's prompt. It receives the
  analysis text and a checklist of 15 evaluation dimensions."
- The red team (G5) "is shown only the original problem statement and the final conclusion
  [...] It gets no intermediate reasoning, no evidence trail and no earlier rounds."

Both must pass before a case is complete. A reviewer whose answer cannot be read counts as a
critical review with that reason: an unreadable verdict is not a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from harness_cli.investigation.jsonblocks import json_objects
from harness_cli.investigation.report import CompletionReport
from harness_cli.investigation.review import DIMENSIONS, ReviewVerdict
from harness_cli.investigation.runs import ModelCall


@dataclass
class ReviewOutcome:
    verdict: ReviewVerdict
    raw: dict[str, Any]


def review(
    ask: ModelCall, *, render: Any, ticket: str, slate: str, analysis: str, report: CompletionReport
) -> ReviewOutcome:
    """Run both reviews and merge them into one verdict (REVIEW.json's shape)."""
    dimensions = "\n".join(f"- {code}: {name}" for code, name in DIMENSIONS.items())
    adversarial_text = ask(
        "adversarial-reviewer",
        render("adversarial-reviewer", dimensions=dimensions, slate=slate, analysis=analysis),
    )
    conclusion = report.root_cause.summary if report.root_cause else ""
    conclusion = "\n\n".join(x for x in (conclusion, report.draft_response) if x)
    red_text = ask("red-team", render("red-team", ticket=ticket, conclusion=conclusion))

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
