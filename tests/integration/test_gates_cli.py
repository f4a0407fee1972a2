"""`harness gates REPORT.json [--previous PREV.json] [--review REVIEW.json]`: the verdict on
stdout as JSON (with and without --json), exit 0 even when gates fail, exit 2 on a bad file."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness_cli.investigation.review import DIMENSIONS
from tests.conftest import harness_subprocess
from tests.unit.test_gates import GOOD

Cli = Callable[..., tuple[int, str, str]]
KEYS = {"ceiling", "confidence", "violations", "decision"}


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def report(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(GOOD)
    data.update(changes)
    return data


def review_file(fails: int = 0, severity: str = "none", diverges: bool = False) -> dict[str, Any]:
    return {
        "dimensions": {d: {"verdict": "FAIL" if i < fails else "PASS", "note": ""}
                       for i, d in enumerate(DIMENSIONS)},
        "severity": severity,
        "red_team": {"hypothesis": "a noisy neighbour on the host", "diverges": diverges},
    }  # fmt: skip


@pytest.mark.parametrize("as_json", [False, True])
def test_good_report(cli: Cli, tmp_path: Path, as_json: bool) -> None:
    path = write(tmp_path, "r.json", report())
    code, out, err = cli("gates", path, *(["--json"] if as_json else []))
    assert code == 0, err
    verdict = json.loads(out)
    assert set(verdict) == KEYS
    assert verdict == {"ceiling": 100, "confidence": 88, "violations": [], "decision": "review"}
    assert (len(out.splitlines()) == 1) is as_json
    assert "gates: review" in err


def test_report_inside_model_prose_that_fails_gates_is_still_exit_0(
    cli: Cli, tmp_path: Path
) -> None:
    body = json.dumps(report(open_questions=["q1", "q2"], confidence=95, status="IN_PROGRESS"))
    prose = f"Investigated.\nHowever, the timeline is off.\n```json\n{body}\n```\nEnd."
    code, out, _ = cli("gates", write(tmp_path, "out.md", prose), "--json")
    assert code == 0
    verdict = json.loads(out)
    assert (verdict["ceiling"], verdict["confidence"], verdict["decision"]) == (84, 84, "continue")
    by_code = {v["code"]: v for v in verdict["violations"]}
    assert set(by_code) == {"G2", "A1"}
    assert by_code["A1"]["effect"] == "clamp" and "84%" in by_code["A1"]["message"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"status": "COMPLETE", "confidence": 80,}', "malformed JSON"),
        ("just prose, no block", "no completion report found"),
        ('{"status": "COMPLETE", "confidence": "sure"}', "confidence"),
    ],
)
def test_bad_report_file_exits_2_with_one_line(
    cli: Cli, tmp_path: Path, content: str, needle: str
) -> None:
    code, out, err = cli("gates", write(tmp_path, "bad.json", content))
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_missing_file_exits_2(cli: Cli, tmp_path: Path) -> None:
    code, out, err = cli("gates", str(tmp_path / "nope.json"), "--json")
    assert code == 2
    assert json.loads(out)["error"] == "InputError"
    assert "no such file" in err


def test_previous_g1_and_degrading(cli: Cli, tmp_path: Path) -> None:
    prev = write(tmp_path, "prev.json", report(status="IN_PROGRESS", confidence=60,
                                                open_questions=["a"]))  # fmt: skip
    cur = write(tmp_path, "cur.json", report(status="IN_PROGRESS", confidence=70,
                                              open_questions=["a", "b"]))  # fmt: skip
    code, out, _ = cli("gates", cur, "--previous", prev, "--json")
    verdict = json.loads(out)
    assert code == 0
    assert "G1" in [v["code"] for v in verdict["violations"]]
    assert (verdict["ceiling"], verdict["confidence"]) == (60, 60)

    # degrading is two drops in a row: one drop of 13 is not a trend, two drops of 8 are
    p1 = write(tmp_path, "p1.json", report(status="IN_PROGRESS", confidence=85))
    cur = write(tmp_path, "c2.json", report(status="IN_PROGRESS", confidence=72,
                                            assumption_register=["x"]))  # fmt: skip
    code, out, _ = cli("gates", cur, "--previous", p1, "--json")
    assert json.loads(out)["decision"] == "continue"
    p1 = write(tmp_path, "p1.json", report(status="IN_PROGRESS", confidence=80))
    p2 = write(tmp_path, "p2.json", report(status="IN_PROGRESS", confidence=72,
                                           assumption_register=["x"]))  # fmt: skip
    cur = write(tmp_path, "c2.json", report(status="IN_PROGRESS", confidence=64,
                                            assumption_register=["y"]))  # fmt: skip
    code, out, _ = cli("gates", cur, "--previous", p1, "--previous", p2, "--json")
    assert json.loads(out)["decision"] == "exit_degrading"


def test_review_p7_and_g5(cli: Cli, tmp_path: Path) -> None:
    rep = write(tmp_path, "r.json", report(confidence=90))
    rv = write(tmp_path, "rv.json", review_file(fails=5, severity="minor"))
    code, out, _ = cli("gates", rep, "--review", rv)
    verdict = json.loads(out)
    assert code == 0
    assert (verdict["ceiling"], verdict["confidence"], verdict["decision"]) == (65, 65, "continue")
    assert "P7" in [v["code"] for v in verdict["violations"]]

    rv = write(tmp_path, "rv2.json", review_file(diverges=True))
    verdict = json.loads(cli("gates", rep, "--review", rv, "--json")[1])
    assert [v["code"] for v in verdict["violations"]] == ["G5"]
    assert verdict["decision"] == "continue"

    rv = write(tmp_path, "rv3.json", review_file())
    assert json.loads(cli("gates", rep, "--review", rv, "--json")[1])["decision"] == (
        "exit_complete"
    )


def test_bad_review_file_exits_2(cli: Cli, tmp_path: Path) -> None:
    rep = write(tmp_path, "r.json", report())
    incomplete = review_file()
    del incomplete["dimensions"]["D9"]
    code, _, err = cli("gates", rep, "--review", write(tmp_path, "rv.json", incomplete))
    assert code == 2 and "D9" in err and len(err.strip().splitlines()) == 1


def test_plain_stdout_is_json_in_a_real_process(tmp_path: Path) -> None:
    path = write(tmp_path, "r.json", report(assumption_register=[]))
    code, out, err = harness_subprocess("gates", path)
    assert code == 0, err
    verdict = json.loads(out)
    assert set(verdict) == KEYS and verdict["violations"][0]["code"] == "A3"
