"""The ways to `exit=complete`: an honest run from a Slack ticket to the draft in the case
thread, and the reference's incident, where a review pulls 90 down to 65 and the loop goes
back for another iteration instead of completing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness_cli.investigation.gates.a_gates import PIN_HEADING, pinned_block
from harness_cli.loop.report import extract_report
from tests.investigation.conftest import BOTH, CASE, CLI_MARKS, TICKET, Investigation


@pytest.mark.parametrize("runtime", BOTH)
def test_an_honest_investigation_completes_and_posts_its_draft_in_the_case_thread(
    inv: Investigation, slack_emu: Any
) -> None:
    inv.script("inv_honest")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    code, _, err = inv.cli("poll-slack")
    assert code == 0, err
    [thread] = slack_emu.messages("D0SELF")  # the case thread, opened by intake

    data = inv.investigate(post=True)

    assert str(data["exit_line"]).startswith("exit=complete")
    assert data["iterations"] == 2 and data["confidence"] == 88
    assert data["status"] == "awaiting_approval"
    root, draft = slack_emu.messages("D0SELF")
    assert root["ts"] == thread["ts"]
    # #34 item 13: one message per outcome — the live status placeholder, edited in place
    # while the run goes on, ends as the draft itself (one cost line, not two messages)
    assert draft["thread_ts"] == thread["ts"] and draft["ts"] == data["posted_ts"]
    assert draft["text"].startswith(f"`{data['exit_line']}`")
    assert draft["text"].count(data["exit_line"]) == 1 and draft["text"].count("Cost:") <= 1
    assert "Orders of exactly 10 units miss the bulk discount" in draft["text"]
    # the status placeholder (become the draft) is all the investigation posted
    assert slack_emu.calls("chat.postMessage") == 2
    assert slack_emu.messages("C0SUPPORT")[-1]["user"] == "U0CUSTOMER"

    folder = inv.case_dir()
    case = inv.case_json()
    assert case["status"] == "awaiting_approval" and case["exit"] == data["exit_line"]
    analysis = (folder / "ANALYSIS.md").read_text()
    assert "Confidence: 60% → 88%" in analysis
    assert f"`{data['exit_line']}`" in analysis
    assert "change the comparison to >= in pricing/discount.py" in (folder / "TASK.md").read_text()
    assert inv.reviews() == [2]
    assert inv.review(2)["verdict"]["decision"] == "exit_complete"
    for n in (1, 2):
        calls = inv.iteration(n)["calls"]
        assert calls and all(
            c["input_tokens"] + c["cache_creation_tokens"] + c["cache_read_tokens"] > 0
            for c in calls
        )
    # iteration 2: no guard notes owed, the assumption of iteration 1 pinned at the tail
    first, second = inv.prompts()
    assert "## SYSTEM QUALITY GUARD" not in second
    pinned = pinned_block(extract_report(inv.iteration(1)["output"]).report)
    assert pinned.startswith(PIN_HEADING) and second.rstrip().endswith(pinned.rstrip())
    assert "## Empirical anchor" in first and "## Empirical anchor" not in second
    _assert_reviewers_isolated(inv)
    inv.assert_no_bash()


def _assert_reviewers_isolated(inv: Investigation) -> None:
    """The adversarial reviewer gets the analysis, not the investigator's prompt; the red team
    gets the problem and the conclusion, not the slate or the evidence trail."""
    [adversarial] = inv.prompts("adversarial-reviewer")
    [red] = inv.prompts("red-team")
    assert "You are the on-call investigator" not in adversarial
    assert "hypothesis_slate" in adversarial
    assert TICKET.split(".")[0] in red
    for hidden in ("hypothesis_slate", "You are the on-call investigator", '"kind": "HARD"'):
        assert hidden not in red


@pytest.mark.parametrize(
    ("runtime", "severity"),
    [
        pytest.param("claude-code", "minor", marks=CLI_MARKS),
        ("anthropic", "minor"),
        ("anthropic", "critical"),
    ],
)
def test_a_review_that_drops_90_to_65_sends_the_loop_back(
    inv: Investigation, severity: str
) -> None:
    inv.script("inv_review_drop", severity=severity)
    inv.open_case()

    data = inv.investigate()

    first_review = inv.review(1)
    assert first_review["review"]["severity"] == severity
    verdict = first_review["verdict"]
    assert verdict["ceiling"] == 65 and verdict["confidence"] == 65  # P7: 100 − 5 × 7
    assert verdict["decision"] == "continue"
    assert {"P7", "D"} <= {v["code"] for v in verdict["violations"]}
    # another iteration came after the review, with the critique at the head of its prompt
    assert inv.iteration(2)["iteration"] == 2
    inv.assert_guard_notes_at_head(
        inv.prompts()[1],
        "[P7] the adversarial review failed 5 dimension(s)",
        "ceiling lowered to 65%",
        "rule out the cached price list (H5)",
    )
    assert inv.reviews() == [1, 2]
    assert inv.review(2)["verdict"]["decision"] == "exit_complete"
    assert str(data["exit_line"]).startswith("exit=complete") and data["iterations"] == 2
    assert data["confidence"] == 88
    case = inv.case_json()
    # the number the review set is part of the trajectory, numbered by its iteration
    points = [(p["iteration"], p["confidence"], p.get("review", False)) for p in case["confidence"]]
    assert points == [(1, 90, False), (1, 65, True), (2, 88, False)]
    analysis = Path(inv.case_dir() / "ANALYSIS.md").read_text()
    assert "Confidence: 90% → 65% (review) → 88%" in analysis
    inv.assert_no_bash()
