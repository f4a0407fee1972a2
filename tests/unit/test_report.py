"""The completion report model and its extraction from model prose (CONTRACT §4): lenient where
the meaning is clear, strict where a gate needs structure, and never an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness_cli.loop.report import (
    AdjacentProblem,
    CompletionReport,
    UncheckedSource,
    extract_report,
    normalise_confidence,
    parse_report,
)


def block(**fields: Any) -> str:
    return json.dumps({"status": "IN_PROGRESS", "confidence": 40, **fields})


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (78, 78),
        (0, 0),
        (100, 100),
        (0.78, 78),
        (1.0, 100),
        (0.005, 1),
        (1, 1),  # an int is already a percentage
        (78.4, 78),
        (78.5, 79),
        ("78", 78),
        ("78%", 78),
        (" 0.78 ", 78),
        ("1", 1),
        ("0.5%", 1),  # a percent sign means percent, even below 1
    ],
)
def test_confidence_is_normalised(given: Any, expected: int) -> None:
    assert normalise_confidence(given) == expected


@pytest.mark.parametrize("given", ["high", 101, -1, 1.5e3, True, None, [70], "", "7O"])
def test_meaningless_confidence_is_rejected(given: Any) -> None:
    with pytest.raises(ValueError, match="confidence"):
        normalise_confidence(given)


def test_sloppy_but_clear_fields_are_accepted() -> None:
    report = parse_report(
        {
            "status": "complete",
            "confidence": 0.9,
            "open_questions": "why did it start on Tuesday?",
            "unchecked_sources": ["datadog", {"name": "db", "access_status": "403"}],
            "adjacent_problems": ["none", {"summary": "disk", "status": "open"}],
            "contradiction_register": [{"a": "b"}, ""],
            "root_cause": "a bad deploy",
            "actions": ["restart the worker", {"description": "x", "verify_action": "watch"}],
            "new_facts": None,
            "draft_response": None,
            "extra_key_from_a_chatty_model": 1,
        }
    )
    assert report.status == "COMPLETE"
    assert report.confidence == 90
    assert report.open_questions == ["why did it start on Tuesday?"]
    assert report.unchecked_sources[0] == "datadog"
    assert isinstance(report.unchecked_sources[1], UncheckedSource)
    assert report.adjacent_problems[0] == "none"
    assert isinstance(report.adjacent_problems[1], AdjacentProblem)
    assert report.contradiction_register == ['{"a": "b"}']  # kept word for word, empty dropped
    assert report.root_cause is not None and report.root_cause.summary == "a bad deploy"
    assert report.root_cause.evidence == []
    assert report.actions[0].description == "restart the worker"
    assert report.actions[0].verify_action is None
    assert report.actions[1].verify_action is not None
    assert report.actions[1].verify_action.description == "watch"
    assert report.new_facts == []
    assert report.draft_response == ""


def test_an_unknown_evidence_kind_is_inferred_and_kept_not_a_rejected_report() -> None:
    report = parse_report(
        {
            "status": "IN_PROGRESS",
            "confidence": 50,
            "root_cause": {
                "summary": "s",
                "evidence": ["a log line", {"claim": "b", "kind": "hard"}, {"kind": "X"}],
            },
        }
    )
    assert report.root_cause is not None
    assert [e.kind for e in report.root_cause.evidence] == ["INFERRED", "HARD", "INFERRED"]
    assert [e.stated_kind for e in report.root_cause.evidence] == ["", "", "X"]
    assert not any(e.is_hard for e in report.root_cause.evidence)  # "b" names no source


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"confidence": 50}, "status"),
        ({"status": "COMPLETE"}, "confidence"),
        ({"status": "DONE", "confidence": 50}, "status"),
        ({"status": "COMPLETE", "confidence": "very"}, "confidence"),
        ({"status": "COMPLETE", "confidence": 50, "actions": 3}, "actions"),
        ([1, 2], "JSON object"),
    ],
)
def test_structure_a_gate_needs_is_strict(data: Any, needle: str) -> None:
    with pytest.raises(ValueError, match=needle) as err:
        parse_report(data)
    assert "\n" not in str(err.value)


def test_adjacent_problem_open_means_not_closed() -> None:
    assert AdjacentProblem(summary="s", status="open").is_open
    assert AdjacentProblem(summary="s", status="investigating").is_open
    assert AdjacentProblem(summary="s", status="").is_open
    assert not AdjacentProblem(summary="s", status="Resolved").is_open
    assert not AdjacentProblem(summary="s", status="out of scope").is_open
    assert not AdjacentProblem(summary="s", status="ruled-out").is_open


# --- extraction ------------------------------------------------------------------------------


def test_fenced_block_inside_prose() -> None:
    text = f"I looked at the logs.\n\n```json\n{block(confidence=55)}\n```\n\nThat's all."
    found = extract_report(text)
    assert found.report is not None and found.report.confidence == 55
    assert found.problems == ()
    assert "I looked at the logs." in found.prose and "That's all." in found.prose
    assert '"confidence"' not in found.prose


def test_bare_pretty_printed_object() -> None:
    body = json.dumps({"status": "BLOCKED", "confidence": 62}, indent=2)
    found = extract_report(f"Summary first.\n{body}\nDone.")
    assert found.report is not None and found.report.status == "BLOCKED"


def test_a_plain_json_file_is_a_report() -> None:
    found = extract_report(block(confidence=12))
    assert found.report is not None and found.report.confidence == 12


def test_last_valid_block_wins() -> None:
    text = (
        f"Draft:\n```json\n{block(confidence=30)}\n```\n"
        f"Revised after checking the DB:\n{block(confidence=70)}\n"
    )
    found = extract_report(text)
    assert found.report is not None and found.report.confidence == 70
    assert found.problems == ()
    assert "30" in found.prose  # the superseded draft stays in the prose


def test_malformed_last_block_is_named_not_guessed() -> None:
    text = (
        f"```json\n{block(confidence=30)}\n```\n"
        'Final:\n```json\n{"status": "COMPLETE", "confidence": 90,}\n```\n'
    )
    found = extract_report(text)
    assert found.report is not None and found.report.confidence == 30
    assert len(found.problems) == 1
    assert "ignored" in found.problems[0] and "malformed JSON" in found.problems[0]
    assert "at line 5" in found.problems[0] and "line 6, column 41" in found.problems[0]


def test_invalid_last_block_is_named() -> None:
    text = f"{block(confidence=30)}\n\n" + json.dumps({"status": "DONE", "confidence": 90})
    found = extract_report(text)
    assert found.report is not None and found.report.confidence == 30
    assert "status" in found.problems[0]


def test_only_a_malformed_block_is_a_problem_not_an_exception() -> None:
    text = 'Here it is:\n{\n  "status": "COMPLETE",\n  "confidence": 90,\n}\n'
    found = extract_report(text)
    assert found.report is None
    assert found.prose == text
    (problem,) = found.problems
    assert "malformed JSON" in problem and "line 2" in problem and "\n" not in problem


def test_no_block_at_all() -> None:
    found = extract_report("I could not finish; the model ran out of tokens.")
    assert found.report is None
    assert "no completion report found" in found.problems[0]


def test_unrelated_json_is_not_a_report() -> None:
    text = (
        'The API answered {"status": 500, "error": "boom"}.\n'
        '```python\nx = {"status": "COMPLETE", "confidence": 99}\n```\n'
        f"```json\n{block(confidence=44)}\n```"
    )
    found = extract_report(text)
    assert found.report is not None and found.report.confidence == 44
    assert found.problems == ()


def test_inner_objects_of_a_broken_block_are_not_taken_for_reports() -> None:
    broken = (
        '{\n  "status": "COMPLETE", "confidence": 90,\n'
        '  "adjacent_problems": [{"summary": "x", "status": "open", "confidence": 1}]\n'
        "  oops\n}"
    )
    found = extract_report(broken)
    assert found.report is None
    assert "malformed JSON" in found.problems[0]


def test_wrapped_report_is_unwrapped() -> None:
    text = json.dumps({"completion_report": {"status": "COMPLETE", "confidence": 81}})
    found = extract_report(text)
    assert found.report is not None and found.report.confidence == 81


def test_report_round_trips() -> None:
    report = parse_report(json.loads(block(open_questions=["q"])))
    assert CompletionReport.model_validate(report.model_dump()) == report


def test_nested_objects_of_a_valid_non_report_are_skipped() -> None:
    slate = json.dumps({"hypotheses": [{"status": "COMPLETE", "confidence": 20}]})
    found = extract_report(f"The slate was:\n{slate}\nand no report yet.")
    assert found.report is None
    assert "no completion report found" in found.problems[0]


def test_broken_one_liner_in_prose_is_named() -> None:
    found = extract_report('My report: {"status": "COMPLETE", "confidence": 90,}\nbye')
    assert found.report is None
    assert "malformed JSON" in found.problems[0]


def test_unclosed_brace_does_not_swallow_a_later_report() -> None:
    text = "{ a stray brace opening a line\nthen prose\n" + block(confidence=33)
    found = extract_report(text)
    assert found.report is not None and found.report.confidence == 33
