"""Every gate fires when it should and stays quiet otherwise; the ceiling arithmetic (A1, EQ1,
G1, P7 and the 40 % floor); the table; guard notes and the A7 pin."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness_cli.investigation.gates import (
    ALL_GATES,
    GATES,
    GUARD_HEADING,
    TABLE,
    evaluate,
    evaluate_text,
    pending_guard_notes,
    pinned_block,
    render_guard_notes,
)
from harness_cli.investigation.gates.a_gates import a1_ceiling
from harness_cli.investigation.gates.spot_checks import p7_ceiling
from harness_cli.investigation.review import DIMENSIONS, ReviewVerdict
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.loop.evidence import Evidence, ToolUse
from harness_cli.loop.report import CompletionReport, parse_report

T = InvestigationThresholds()

GOOD: dict[str, Any] = {
    "status": "COMPLETE",
    "confidence": 88,
    "open_questions": [],
    "unchecked_sources": [],
    "contradiction_register": [],
    "assumption_register": ["the 02:00 deploy is the only change that night"],
    "adjacent_problems": [{"summary": "disk at 80%", "status": "tracked", "blocker": ""}],
    "draft_response": "The outage came from the 02:00 deploy; the rollback is ready.",
    "causal_chain_complete": True,
    "root_cause": {
        "summary": "the deploy dropped the index",
        "evidence": [{"claim": "migration log shows DROP INDEX", "kind": "HARD", "source": "log"}],
    },
    "actions": [
        {
            "description": "recreate the index",
            "destructive": False,
            "maps_to_root_cause": True,
            "verify_action": {
                "description": "EXPLAIN the slow query",
                "expected_outcome": "index scan",
                "timing": "right after",
            },
        }
    ],
    "new_facts": ["the index is gone"],
}


def make(**changes: Any) -> CompletionReport:
    data = copy.deepcopy(GOOD)
    data.update(changes)
    return parse_report(data)


def review(fails: int = 0, severity: str = "none", diverges: bool = False) -> ReviewVerdict:
    dims = {d: {"verdict": "FAIL" if i < fails else "PASS", "note": f"n{d}"}
            for i, d in enumerate(DIMENSIONS)}  # fmt: skip
    return ReviewVerdict.model_validate(
        {
            "dimensions": dims,
            "severity": severity,
            "red_team": {"hypothesis": "a cron job", "diverges": diverges, "note": "why"},
            "notes": ["the deploy timeline is assumed"],
        }
    )


def codes(report: CompletionReport, **kwargs: Any) -> tuple[str, ...]:
    return evaluate(report, **kwargs).codes


def test_the_good_report_passes_every_gate_and_goes_to_review() -> None:
    verdict = evaluate(make())
    assert verdict.violations == ()
    assert (verdict.ceiling, verdict.confidence) == (100, 88)
    assert verdict.decision is not None and verdict.decision.action == "review"


# --- one row per gate: (changes, previous changes, review, prose) → fires? -------------------

Case = tuple[dict[str, Any], dict[str, Any] | None, ReviewVerdict | None, str]

FIRES: dict[str, list[Case]] = {
    "G1": [({"open_questions": ["a", "b"], "confidence": 70, "status": "IN_PROGRESS"},
            {"open_questions": ["a"], "confidence": 60, "status": "IN_PROGRESS"}, None, "")],
    "G2": [({}, None, None, "The logs say 02:00. However, the metrics start at 01:50."),
           ({"draft_response": "Fixed, although the alert is inconsistent."}, None, None, ""),
           ({}, None, None, "This contradicts the deploy log.")],
    "G3": [({"adjacent_problems": ["TBD"]}, None, None, ""),
           ({"adjacent_problems": [{"summary": "disk"}]}, None, None, ""),
           ({"unchecked_sources": ["datadog"]}, None, None, "")],
    "G4": [({"status": "BLOCKED", "unchecked_sources": [
                {"name": "db", "access_status": "probably restricted"}]}, None, None, ""),
           ({"status": "BLOCKED", "unchecked_sources": [
                {"name": "db", "access_status": "not checked"}]}, None, None, ""),
           ({"status": "BLOCKED", "unchecked_sources": ["db"]}, None, None, ""),
           ({"status": "BLOCKED", "adjacent_problems": []}, None, None, "")],
    "G5": [({}, None, review(diverges=True), "")],
    "N1": [({"actions": ["restart it"]}, None, None, ""),
           ({"actions": [{"description": "x", "maps_to_root_cause": True}]}, None, None, "")],
    "N2": [({"root_cause": {"summary": "the deploy", "evidence": []}}, None, None, ""),
           ({"root_cause": None}, None, None, "")],
    "N3": [({"draft_response": ""}, None, None, ""), ({"draft_response": " TBD "}, None, None, "")],
    "N5": [({"actions": [{"description": "x", "maps_to_root_cause": True,
                          "verify_action": {"description": "check"}}]}, None, None, "")],
    "A1": [({"open_questions": ["q"], "confidence": 95, "status": "IN_PROGRESS"}, None, None, ""),
           ({"unchecked_sources": [{"name": "a", "access_status": "x"}] * 3}, None, None, "")],
    "A2": [({"adjacent_problems": [{"summary": "s", "status": "open"}]}, None, None, ""),
           ({"adjacent_problems": [{"summary": "s", "status": "investigating"}]}, None, None, "")],
    "A3": [({"assumption_register": []}, None, None, "")],
    "A4": [({"actions": []}, None, None, ""),
           ({"actions": [{**GOOD["actions"][0], "maps_to_root_cause": False}]}, None, None, "")],
    "A5": [({"causal_chain_complete": False}, None, None, "")],
    "A6": [({"actions": [GOOD["actions"][0], {**GOOD["actions"][0], "destructive": True,
                                             "maps_to_root_cause": False}]}, None, None, "")],
    "EQ1": [({"root_cause": {"summary": "s", "evidence": [
                 {"claim": "c", "kind": "INFERRED"}]}}, None, None, "")],
    "P7": [({}, None, review(fails=1, severity="minor"), "")],
    "D": [({}, None, review(severity="critical"), ""), ({}, None, review(severity="minor"), "")],
}  # fmt: skip

QUIET: dict[str, list[Case]] = {
    "G1": [({"open_questions": ["a", "b"], "confidence": 60, "status": "IN_PROGRESS"},
            {"open_questions": ["a"], "confidence": 60, "status": "IN_PROGRESS"}, None, ""),
           ({"open_questions": ["a"], "confidence": 70, "status": "IN_PROGRESS"},
            {"open_questions": ["a"], "confidence": 60, "status": "IN_PROGRESS"}, None, "")],
    "G2": [({"contradiction_register": ["logs 02:00 vs metrics 01:50"]}, None, None,
            "However, the metrics start at 01:50."),
           ({}, None, None, "We checked not only the logs but also the metrics.")],
    "G3": [({"unchecked_sources": [{"name": "db", "access_status": "403"}]}, None, None, "")],
    "G4": [({"status": "BLOCKED", "unchecked_sources": [
                {"name": "db", "access_status": "403 Forbidden for our token"}]}, None, None, ""),
           ({"status": "BLOCKED", "adjacent_problems": [
                {"summary": "VPN", "status": "blocked", "blocker": "needs an admin"}]},
            None, None, ""),
           ({"unchecked_sources": [{"name": "db", "access_status": "probably fine"}]},
            None, None, "")],
    "G5": [({}, None, review(diverges=False), "")],
    "N1": [({"actions": []}, None, None, "")],
    "N2": [({"status": "IN_PROGRESS", "root_cause": None}, None, None, "")],
    "N3": [({"status": "IN_PROGRESS", "draft_response": ""}, None, None, "")],
    "N5": [({"actions": ["restart"]}, None, None, "")],  # N1's case, not N5's
    "A1": [({"open_questions": ["q"], "confidence": 92, "status": "IN_PROGRESS"},
            None, None, "")],
    "A2": [({"status": "IN_PROGRESS", "adjacent_problems": [{"summary": "s", "status": "open"}]},
            None, None, ""),
           ({"adjacent_problems": [{"summary": "s", "status": "Ruled out"}]}, None, None, "")],
    "A3": [({"assumption_register": ["x"]}, None, None, "")],
    "A4": [({"status": "IN_PROGRESS", "actions": []}, None, None, "")],
    "A5": [({"status": "IN_PROGRESS", "causal_chain_complete": False}, None, None, "")],
    "A6": [({"actions": [{**GOOD["actions"][0], "destructive": True}]}, None, None, "")],
    "EQ1": [({"confidence": 60, "root_cause": {"summary": "s", "evidence": [
                  {"claim": "c", "kind": "INFERRED"}]}}, None, None, "")],
    "P7": [({}, None, review(fails=0), "")],
    "D": [({}, None, review(severity="none"), "")],
}  # fmt: skip


def _run(case: Case) -> tuple[str, ...]:
    changes, prev, rev, prose = case
    previous = make(**prev) if prev is not None else None
    return codes(make(**changes), previous=previous, review=rev, prose=prose)


def _params(table: dict[str, list[Case]]) -> list[Any]:
    return [
        pytest.param(code, case, id=f"{code}-{i}")
        for code, cases in table.items()
        for i, case in enumerate(cases)
    ]


@pytest.mark.parametrize(("code", "case"), _params(FIRES))
def test_gate_fires(code: str, case: Case) -> None:
    assert code in _run(case)


@pytest.mark.parametrize(("code", "case"), _params(QUIET))
def test_gate_stays_quiet(code: str, case: Case) -> None:
    assert code not in _run(case)


def test_every_firing_gate_has_both_kinds_of_test() -> None:
    firing = {spec.code for spec in TABLE if spec.effect != "pin" and spec.code != "REPORT"}
    assert set(FIRES) == firing == set(QUIET)


# --- the table -------------------------------------------------------------------------------


def test_the_table_counts_19_functions() -> None:
    counted = [spec.code for spec in TABLE if spec.counted]
    assert len(counted) == len(set(counted)) == 19
    assert counted == [
        "G1", "G2", "G3", "G4", "G5", "N1", "N2", "N3", "N5",
        "A1", "A2", "A3", "A4", "A5", "A6", "A7", "EQ1", "P7", "D",
    ]  # fmt: skip
    assert all(spec.rule and spec.fires for spec in TABLE)


def test_gates_run_in_table_order_and_every_violation_is_in_the_table() -> None:
    assert len(ALL_GATES) == 18  # A7 is the pin, not a firing function
    report = parse_report(
        {"status": "COMPLETE", "confidence": 99, "adjacent_problems": ["x"], "actions": ["y"],
         "open_questions": ["q"], "unchecked_sources": ["s"]}
    )  # fmt: skip
    previous = parse_report({"status": "IN_PROGRESS", "confidence": 50})
    verdict = evaluate(
        report, previous, review(fails=2, severity="critical", diverges=True),
        prose="but", problems=("later block malformed",),
    )  # fmt: skip
    order = [spec.code for spec in TABLE]
    assert list(verdict.codes) == sorted(verdict.codes, key=order.index)
    assert {"G1", "G2", "G3", "G5", "N1", "N2", "N3", "A1", "A2", "A3", "A4", "A5", "EQ1", "P7",
            "D", "REPORT"} <= set(verdict.codes)  # fmt: skip
    for v in verdict.violations:
        assert v.effect == GATES[v.code].effect
        assert "\n" not in v.message


# --- ceiling arithmetic ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("questions", "sources", "ceiling"),
    [(0, 0, 100), (1, 0, 92), (0, 1, 95), (2, 1, 79), (3, 2, 66), (12, 0, 4), (13, 0, 0),
     (20, 20, 0)],
)  # fmt: skip
def test_a1_ceiling(questions: int, sources: int, ceiling: int) -> None:
    report = make(
        open_questions=[f"q{i}" for i in range(questions)],
        unchecked_sources=[{"name": f"s{i}", "access_status": "x"} for i in range(sources)],
    )
    assert a1_ceiling(report, T) == ceiling


def test_a1_clamps_whatever_the_model_writes() -> None:
    verdict = evaluate(make(confidence=95, open_questions=["a", "b"], status="IN_PROGRESS"))
    assert (verdict.ceiling, verdict.confidence, verdict.claimed_confidence) == (84, 84, 95)
    assert "A1" in verdict.codes


def test_g1_cancels_the_upward_move() -> None:
    previous = make(status="IN_PROGRESS", confidence=60, open_questions=["a"])
    verdict = evaluate(make(status="IN_PROGRESS", confidence=80, open_questions=["a", "b"]),
                       previous)  # fmt: skip
    assert (verdict.ceiling, verdict.confidence) == (60, 60)


def test_eq1_caps_at_60_and_the_lower_cap_wins() -> None:
    inferred = {"summary": "s", "evidence": [{"claim": "c", "kind": "INFERRED"}]}
    assert evaluate(make(root_cause=inferred)).ceiling == 60
    # A1 lower than EQ1: A1 wins.
    many = [f"q{i}" for i in range(6)]
    assert evaluate(make(root_cause=inferred, open_questions=many)).ceiling == 52
    # One HARD item with a claim and a source lifts the cap.
    mixed = {"summary": "s", "evidence": [{"claim": "c"}, {"claim": "d", "kind": "HARD",
                                                            "source": "app.log:12"}]}  # fmt: skip
    assert evaluate(make(root_cause=mixed)).ceiling == 100


@pytest.mark.parametrize(
    "item",
    [{"kind": "HARD"}, {"kind": "HARD", "claim": "a log line"}, {"kind": "HARD", "source": "x"},
     {"kind": "STRONG", "claim": "c", "source": "s"}],
)  # fmt: skip
def test_evidence_that_cites_nothing_lifts_no_cap(item: dict[str, str]) -> None:
    verdict = evaluate(make(root_cause={"summary": "s", "evidence": [item]}))
    assert verdict.ceiling == 60 and verdict.confidence == 60
    [eq1] = [v for v in verdict.violations if v.code == "EQ1"]
    assert "read as INFERRED" in eq1.message or "HARD without" in eq1.message


def test_an_unknown_evidence_kind_is_named_even_under_the_cap() -> None:
    items = [{"kind": "HARD", "claim": "c", "source": "s"},
             {"kind": "probable", "claim": "d", "source": "t"}]  # fmt: skip
    cause = {"summary": "s", "evidence": items}
    verdict = evaluate(make(root_cause=cause))
    assert verdict.ceiling == 100
    [eq1] = [v for v in verdict.violations if v.code == "EQ1"]
    assert "'probable' read as INFERRED" in eq1.message


def test_g1_holds_the_harness_number_not_the_claim() -> None:
    # Before: claimed 80, but EQ1 held the harness's number at 60. Now a HARD item lifts EQ1
    # while open questions grew: the number may not rise above 60.
    inferred = {"summary": "s", "evidence": [{"claim": "c", "kind": "INFERRED"}]}
    previous = make(status="IN_PROGRESS", confidence=80, open_questions=["a"],
                    root_cause=inferred)  # fmt: skip
    before = evaluate(previous)
    assert before.confidence == 60
    now = make(status="IN_PROGRESS", confidence=80, open_questions=["a", "b"])
    verdict = evaluate(now, previous, history=[before])
    assert "G1" in verdict.codes  # the claim did not move; the harness's number would have
    assert (verdict.ceiling, verdict.confidence) == (60, 60)


def test_g1_holds_at_the_previous_harness_number_when_the_claim_rises() -> None:
    # Before: claimed 70, A1 (1 question, 8 unchecked sources) held the harness at 52. Now the
    # sources are checked, a question was added and the claim rose to 75: G1 holds at 52, not
    # at the previous claim (70).
    previous = make(
        status="IN_PROGRESS",
        confidence=70,
        open_questions=["a"],
        unchecked_sources=[{"name": f"s{i}", "access_status": "x"} for i in range(8)],
    )
    before = evaluate(previous)
    assert before.confidence == 52
    now = make(status="IN_PROGRESS", confidence=75, open_questions=["a", "b"])
    verdict = evaluate(now, previous, history=[before])
    assert "G1" in verdict.codes
    assert (verdict.ceiling, verdict.confidence) == (52, 52)
    # without the loop's history, the previous report evaluated on its own is the baseline
    assert evaluate(now, previous).confidence == 52


def test_g1_is_quiet_when_the_harness_number_does_not_rise() -> None:
    previous = make(status="IN_PROGRESS", confidence=60, open_questions=["a"])
    now = make(status="IN_PROGRESS", confidence=90, open_questions=["a", "b", "c", "d", "e"])
    verdict = evaluate(now, previous)  # A1 already holds it at 60: no upward move
    assert "G1" not in verdict.codes and verdict.confidence == 60


def _tool(name: str, target: str, ok: bool) -> ToolUse:
    return ToolUse(name, target, ok, "d" * 16, "" if ok else "403 Forbidden")


@pytest.mark.parametrize(
    ("tools", "fires"),
    [
        ((), True),  # "error 403" written with zero tool calls: nothing was tried
        ((_tool("Read", '{"file_path": "/srv/orders-replica/orders.db"}', True),), True),
        ((_tool("mcp__grafana__query", '{"q": "latency"}', False),), True),  # another source
        ((_tool("Read", '{"file_path": "/srv/orders-replica/orders.db"}', False),), False),
        ((_tool("mcp__orders_replica__query", '{"sql": "select 1"}', False),), False),
    ],
)
def test_g4_believes_failed_tool_calls_not_wording(tools: tuple[ToolUse, ...], fires: bool) -> None:
    blocked = make(status="BLOCKED", confidence=40, unchecked_sources=[
        {"name": "orders replica", "access_status": "error 403"}])  # fmt: skip
    verdict = evaluate(blocked, evidence=Evidence(run_tools=tools))
    assert ("G4" in verdict.codes) is fires
    if not tools:
        assert (
            "before a single tool call"
            in next(v for v in verdict.violations if v.code == "G4").message
        )


def test_a_review_of_none_with_fail_dimensions_is_not_clean() -> None:
    rv = review(fails=2, severity="none")
    assert rv.effective_severity == "minor"
    verdict = evaluate(make(), review=rv)
    assert "D" in verdict.codes
    assert verdict.decision is not None and verdict.decision.action == "continue"
    [d] = [v for v in verdict.violations if v.code == "D"]
    assert "stated severity 'none'" in d.message and "D1, D2" in d.message


def test_the_reviewers_notes_reach_the_next_prompt_once_and_whole() -> None:
    long_note = "the deploy timeline is assumed: " + "check the 02:00 change log " * 6
    rv = ReviewVerdict.model_validate(
        {"dimensions": {d: "PASS" for d in DIMENSIONS}, "severity": "minor",
         "red_team": {"hypothesis": "h", "diverges": False}, "notes": [long_note]}
    )  # fmt: skip
    notes = pending_guard_notes(evaluate(make(), review=rv))
    text = "\n".join(notes)
    assert text.count("the deploy timeline is assumed") == 1
    assert " ".join(long_note.split()) in text


@pytest.mark.parametrize(
    ("base", "fails", "expected"),
    [(100, 0, 100), (100, 1, 93), (100, 5, 65), (100, 8, 44), (100, 9, 40), (100, 15, 40),
     (60, 2, 46), (60, 3, 40), (45, 1, 40), (35, 2, 35)],
)  # fmt: skip
def test_p7_ceiling_and_floor(base: int, fails: int, expected: int) -> None:
    assert p7_ceiling(base, fails, T) == expected


def test_eq1_and_p7_interplay() -> None:
    inferred = {"summary": "s", "evidence": [{"claim": "c", "kind": "INFERRED"}]}
    verdict = evaluate(make(root_cause=inferred), review=review(fails=2, severity="minor"))
    assert (verdict.ceiling, verdict.confidence) == (46, 46)  # 60 − 2×7
    verdict = evaluate(make(root_cause=inferred), review=review(fails=4, severity="minor"))
    assert verdict.ceiling == 40  # 60 − 28 = 32, floored at 40


def test_thresholds_come_from_one_model() -> None:
    strict = InvestigationThresholds(open_question_penalty=0.1, inferred_only_cap=50)
    assert evaluate(make(open_questions=["q"]), thresholds=strict).ceiling == 90
    with pytest.raises(ValueError, match="extra"):
        InvestigationThresholds.model_validate({"exit_confidnce": 70})


# --- guard notes and the pin -----------------------------------------------------------------


def test_guard_notes_render_under_the_exact_heading() -> None:
    verdict = evaluate(make(assumption_register=[], actions=["restart"]))
    notes = pending_guard_notes(verdict)
    assert notes[0].startswith("[N1] ") and any(n.startswith("[A3] ") for n in notes)
    text = render_guard_notes(notes)
    assert text.splitlines()[0] == "## SYSTEM QUALITY GUARD NOTES (from previous iteration)"
    assert text.splitlines()[0] == GUARD_HEADING
    assert "Address every note below first" in text
    assert "1. [N1]" in text
    assert render_guard_notes([]) == ""


def test_force_notes_join_the_guard_notes() -> None:
    verdict = evaluate(make(confidence=65))
    assert verdict.decision is not None and verdict.decision.force == "CONFIDENCE_FORCE"
    assert pending_guard_notes(verdict)[-1].startswith("[CONFIDENCE_FORCE 1/3]")


def test_a7_pins_unresolved_entries_word_for_word() -> None:
    report = make(
        contradiction_register=["logs say 02:00 but metrics say 01:50", "RESOLVED: tz mix-up"],
        assumption_register=["the  deploy  is the only change\n(per the change log)",
                             "[verified] backups ran"],
    )  # fmt: skip
    block = pinned_block(report)
    assert block.startswith("## PINNED CONTEXT")
    assert "- logs say 02:00 but metrics say 01:50\n" in block
    assert "- the  deploy  is the only change\n(per the change log)\n" in block
    assert "tz mix-up" not in block and "backups ran" not in block
    assert pinned_block(make(assumption_register=["RESOLVED: x"])) == ""
    assert pinned_block(None) == ""


def test_missing_report_is_a_guard_note_and_another_iteration() -> None:
    report, verdict = evaluate_text("I ran out of time, sorry.")
    assert report is None
    assert verdict.codes == ("REPORT",)
    assert verdict.decision is not None and verdict.decision.action == "continue"
    assert "no completion report" in pending_guard_notes(verdict)[0]


def test_missing_report_carries_confidence_forward() -> None:
    first = evaluate(make(status="IN_PROGRESS", confidence=72))
    _, verdict = evaluate_text('{"status": "COMPLETE", "confidence": 9,}', history=[first])
    assert (verdict.confidence, verdict.report_ok) == (72, False)
    assert verdict.decision is not None and verdict.decision.action == "continue"


def test_prose_around_the_block_feeds_g2() -> None:
    text = "The deploy explains it. But the first error predates it.\n" + make().model_dump_json()
    report, verdict = evaluate_text(text)
    assert report is not None and "G2" in verdict.codes


# -- sources from the wire: the catalog and the calls this run made ----------------------------

CATALOG = ("logs", "metrics", "docs")


def _mcp(name: str, ok: bool = True) -> ToolUse:
    return ToolUse(name, "{}", ok, "d1", "" if ok else "403 Forbidden")


def _cites(source: str) -> CompletionReport:
    cause = {"summary": "s", "evidence": [{"claim": "c", "kind": "HARD", "source": source}]}
    return make(root_cause=cause)


def test_hard_evidence_citing_an_unqueried_source_is_capped_by_eq1() -> None:
    report = _cites("logs: pricing-service 11:02 discount_skipped qty=10")
    queried_logs = Evidence(run_tools=(_mcp("mcp__logs__search_logs"),), catalog=CATALOG)
    never = Evidence(run_tools=(_mcp("mcp__metrics__query_metrics"),), catalog=CATALOG)
    failed = Evidence(run_tools=(_mcp("mcp__logs__search_logs", ok=False),), catalog=CATALOG)

    assert evaluate(report, evidence=queried_logs).ceiling == 100
    for evidence in (never, failed):
        verdict = evaluate(report, evidence=evidence)
        assert verdict.ceiling == 60 and verdict.confidence == 60
        [eq1] = [v for v in verdict.violations if v.code == "EQ1"]
        assert "logs never answered this run" in eq1.message
    # Checked by hand (no record of the run's calls): the citation is taken as written.
    assert evaluate(report).ceiling == 100
    # A citation that names no catalog source (a file read, a repo) is not the wire's to judge.
    assert evaluate(_cites("pricing/discount.py:14"), evidence=never).ceiling == 100


def test_blocked_with_a_configured_source_never_queried_fires_g4() -> None:
    blocked = make(status="BLOCKED", unchecked_sources=[], adjacent_problems=[
        {"summary": "logs down", "status": "open", "blocker": "logs refused"}])  # fmt: skip
    tools = (_mcp("mcp__logs__search_logs", ok=False),)
    verdict = evaluate(blocked, evidence=Evidence(run_tools=tools, catalog=CATALOG))
    [g4] = [v for v in verdict.violations if v.code == "G4"]
    assert "metrics (configured, never queried)" in g4.message
    assert "logs (configured" not in g4.message  # it was queried, and it failed: a real error
    every = (*tools, _mcp("mcp__metrics__query_metrics"), _mcp("mcp__docs__search_docs"))
    verdict = evaluate(blocked, evidence=Evidence(run_tools=every, catalog=CATALOG))
    assert not [v for v in verdict.violations if v.code == "G4"]


def test_the_sources_line_names_what_was_queried_failed_and_never_tried() -> None:
    from harness_cli.loop.evidence import sources_line

    tools = (_mcp("mcp__logs__search_logs", ok=False), _mcp("mcp__docs__search_docs"),
             _mcp("Read"))  # fmt: skip
    assert sources_line(tools, CATALOG) == "sources: docs (logs failed; metrics never queried)"
    assert sources_line((_mcp("Read"),), ()) == ""
