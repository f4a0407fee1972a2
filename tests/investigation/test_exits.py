"""The loop's rules on a misbehaving model: the A1 clamp, the three force-continue rules and the
exits degrading, stalled and timeout — each from a scripted model through a real runtime.

The rules are the same Python whatever the runtime, so these run on the harness's own loop;
the A1 test also runs on the claude CLI (prompt assembly: guard notes first, A7 pinned last),
and the bench runs every case of the misbehaving library on both runtimes."""

from __future__ import annotations

import pytest

from harness_cli.investigation.gates.a_gates import PIN_HEADING, pinned_block
from harness_cli.loop.report import extract_report
from tests.investigation.conftest import BOTH, Investigation


def _exit(data: dict[str, object]) -> str:
    return str(data["exit_line"]).split()[0]


@pytest.mark.parametrize("runtime", BOTH)
def test_inflated_confidence_is_clamped_to_the_a1_ceiling(inv: Investigation) -> None:
    inv.script("inv_overconfident")
    inv.thresholds(max_iterations=2)
    inv.open_case()

    data = inv.investigate()

    first = inv.iteration(1)
    assert first["claimed_confidence"] == 95
    assert first["verdict"]["ceiling"] == 76  # 100 − 3 × 8
    assert first["verdict"]["confidence"] == 76
    assert [v["code"] for v in first["verdict"]["violations"]] == ["A1"]
    assert inv.iteration(2)["verdict"]["confidence"] == 90  # one question left: ceiling 92
    assert _exit(data) == "exit=timeout" and data["iterations"] == 2
    # iteration 2 reads the A1 note first and the pinned registers last
    prompts = inv.prompts()
    assert len(prompts) == 2
    assert PIN_HEADING not in prompts[0] and "## SYSTEM QUALITY GUARD" not in prompts[0]
    inv.assert_guard_notes_at_head(prompts[1], "[A1] confidence 95% is above the A1 ceiling 76%")
    report = extract_report(first["output"]).report
    pinned = pinned_block(report)
    assert "the invoice line shows 11" in pinned
    assert prompts[1].rstrip().endswith(pinned.rstrip())
    assert prompts[1].index(PIN_HEADING) > prompts[1].index("iteration 2 of")
    inv.assert_no_bash()


def test_complete_under_70_is_forced_on_and_never_exits_complete(inv: Investigation) -> None:
    inv.script("inv_low_complete")
    inv.open_case()

    data = inv.investigate()

    assert _exit(data) == "exit=blocked" and data["iterations"] == 4
    assert "under 70% after 3 forced rounds" in str(data["exit_line"])
    reasons = [inv.iteration(n)["reason"] for n in range(1, 5)]
    assert all(r.startswith("CONFIDENCE_FORCE") for r in reasons[:3]), reasons
    assert inv.iteration(4)["verdict"]["decision"] == "exit_blocked"
    assert inv.reviews() == []  # under the bar the reviews never even start
    prompts = inv.prompts()
    assert len(prompts) == 4
    for n in (1, 2, 3):
        inv.assert_guard_notes_at_head(prompts[n], f"[CONFIDENCE_FORCE {n}/3]")
    case = inv.case_json()
    assert case["status"] == "escalated" and case["exit"].startswith("exit=blocked")
    assert all(p["confidence"] < 70 for p in case["confidence"])
    inv.assert_no_bash()


def test_a_symptom_level_finding_is_forced_to_trace_the_chain(inv: Investigation) -> None:
    inv.script("inv_symptom")
    inv.open_case()

    data = inv.investigate()

    for n in (1, 2):
        it = inv.iteration(n)
        assert it["reason"].startswith("CAUSAL_CHAIN_FORCE"), it["reason"]
        assert "A5" in [v["code"] for v in it["verdict"]["violations"]]
    prompts = inv.prompts()
    inv.assert_guard_notes_at_head(prompts[1], "[A5]", "[CAUSAL_CHAIN_FORCE 1/3]")
    inv.assert_guard_notes_at_head(prompts[2], "[CAUSAL_CHAIN_FORCE 2/3]")
    assert inv.reviews() == [3]  # only the traced chain reached the reviewers
    assert _exit(data) == "exit=complete" and data["iterations"] == 3
    inv.assert_no_bash()


def test_blocked_with_reachable_sources_is_forced_then_honoured(
    inv: Investigation, slack_emu: object
) -> None:
    inv.script("inv_false_blocker")
    inv.open_case()

    data = inv.investigate(post=True)

    for n in (1, 2, 3):
        it = inv.iteration(n)
        assert it["reason"].startswith("G_BLOCKER_FORCE"), it["reason"]
        assert "G4" in [v["code"] for v in it["verdict"]["violations"]]
    assert inv.iteration(4)["verdict"]["decision"] == "exit_blocked"
    assert _exit(data) == "exit=blocked" and data["iterations"] == 4
    # honoured once the force is spent, and said to be unverified: no call to it ever failed
    assert "(unverified blockers after 3 forced rounds)" in str(data["exit_line"])
    prompts = inv.prompts()
    inv.assert_guard_notes_at_head(
        prompts[1], "[G4] BLOCKED before a single tool call", "orders read replica",
        "[G_BLOCKER_FORCE 1/3]",
    )  # fmt: skip
    inv.assert_guard_notes_at_head(prompts[3], "[G_BLOCKER_FORCE 3/3]")
    # a blocked exit posts what blocks it, never the draft
    [post] = slack_emu.messages("D0SELF")  # type: ignore[attr-defined]
    assert post["text"].startswith("`exit=blocked")
    assert "orders read replica" in post["text"]
    assert "unverified: no call to it failed in this run" in post["text"]
    assert "DRAFT-OF-A-BLOCKED-CASE" not in post["text"]
    assert inv.case_json()["status"] == "escalated"
    inv.assert_no_bash()


def test_two_consecutive_drops_of_more_than_10_points_exit_degrading(inv: Investigation) -> None:
    inv.script("inv_degrading")
    inv.open_case()

    data = inv.investigate()

    assert _exit(data) == "exit=degrading" and data["iterations"] == 3
    assert "(dropped 80%→72%→64%)" in str(data["exit_line"])
    assert [inv.iteration(n)["verdict"]["confidence"] for n in (1, 2, 3)] == [80, 72, 64]
    assert inv.iteration(2)["verdict"]["decision"] == "continue"  # one drop of 8 is no trend
    inv.assert_no_bash()


def test_two_rounds_without_new_facts_exit_stalled(inv: Investigation) -> None:
    inv.script("inv_stalled")
    inv.open_case()

    data = inv.investigate()

    assert _exit(data) == "exit=stalled" and data["iterations"] == 3
    assert "(two rounds, zero new facts)" in str(data["exit_line"])
    assert inv.iteration(2)["verdict"]["decision"] == "continue"
    inv.assert_no_bash()


def test_the_iteration_budget_exits_timeout(inv: Investigation) -> None:
    inv.script("inv_budget")
    inv.thresholds(max_iterations=4)
    inv.open_case()

    data = inv.investigate()

    assert _exit(data) == "exit=timeout" and data["iterations"] == 4
    assert inv.iteration_count() == 4
    assert "iteration 4 of at most 4" in inv.prompts()[-1]
    assert inv.iteration(4)["reason"] == "iteration budget of 4 used up"
    assert "Confidence: 50% → 50% → 50% → 50%" in (inv.case_dir() / "ANALYSIS.md").read_text()
    inv.assert_no_bash()
