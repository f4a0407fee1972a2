"""Reviewer isolation by construction, proven on the wire: markers planted where a reviewer
must not look (the knowledge base, a file of the case folder, the slate, each round's prose,
the investigator's notes, the session transcripts) and read back from what reached the model.

The red team may see the problem statement and the conclusion, nothing else; the adversarial
reviewer the narrative (slate, every round, the notes), never a prompt, a transcript or the
investigator's system prefix. Neither can write, and neither is given a path to the case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.model_script import RequestView
from tests.investigation.conftest import BOTH, TICKET, Investigation

KB = "KB-MARK-7a1f"
CASE_FILE = "CASE-MARK-2d90"
SLATE = "SLATE-MARK-3f8e"
ROUND_ONE = "ROUND-ONE-MARK-9b1d"
ROUND_TWO = "ROUND-TWO-MARK-4c7a"
NOTES = "NOTES-MARK-5e2c"
INVESTIGATOR_PROMPT = ("You are the on-call investigator", "Go on with the investigation")
WRITE_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"}


def _plant(inv: Investigation) -> Path:
    kb = inv.root / "sops" / "team-a" / "KNOWLEDGE-BASE.md"
    kb.write_text(kb.read_text() + f"\n- {KB}: a past incident of the bulk discount.\n")
    case = inv.open_case()
    (case / "PLANTED.md").write_text(f"{CASE_FILE}: nothing a reviewer may read\n")
    inv.script(
        "inv_isolation",
        case_dir=str(case),
        user_home=str(inv.root / "user-home"),
        harness_home=str(inv.root / "harness-home"),
    )
    return case


def _bodies(inv: Investigation, role: str, *, first_only: bool) -> list[dict[str, Any]]:
    bodies = inv.requests(role)
    assert bodies, f"no {role} request reached the model"
    return [b for b in bodies if RequestView.from_body(b).turn == 0] if first_only else bodies


def _seen(bodies: list[dict[str, Any]]) -> str:
    return json.dumps(bodies, ensure_ascii=False)


@pytest.mark.parametrize("runtime", BOTH)
def test_each_reviewer_is_given_only_what_its_role_may_see(inv: Investigation) -> None:
    case = _plant(inv)

    data = inv.investigate()

    assert str(data["exit_line"]).startswith("exit=complete")
    red = _bodies(inv, "red-team", first_only=True)
    adversarial = _bodies(inv, "adversarial-reviewer", first_only=True)
    red_seen, adv_seen = _seen(red), _seen(adversarial)
    # the red team: the problem statement and the conclusion, nothing else
    assert TICKET.split(".")[0] in red_seen and "CONCLUSION-TEXT" in red_seen
    for hidden in (KB, CASE_FILE, SLATE, ROUND_ONE, ROUND_TWO, NOTES, *INVESTIGATOR_PROMPT):
        assert hidden not in red_seen, f"the red team was given {hidden!r}"
    # the adversarial reviewer: the whole narrative, never a prompt or the system prefix
    for shown in (SLATE, ROUND_ONE, ROUND_TWO, NOTES):
        assert shown in adv_seen, f"the adversarial reviewer was not given {shown!r}"
    for hidden in (KB, CASE_FILE, *INVESTIGATOR_PROMPT):
        assert hidden not in adv_seen, f"the adversarial reviewer was given {hidden!r}"
    # no path back to the case, and a working folder of its own outside the workspace
    for body in (*red, *adversarial):
        given = _seen([body])
        assert str(case) not in given and str(inv.root / "workspace") not in given
        cwd = RequestView.from_body(body).cwd
        assert cwd is not None and not Path(cwd).resolve().is_relative_to(inv.root)
        offered = {t.get("name") for t in body.get("tools") or []}
        assert not offered & WRITE_TOOLS, sorted(offered)
    # what each was given is on record; the red team got exactly two files
    staged = inv.review(2)["staged"]
    assert sorted(staged["red-team"]) == ["conclusion.md", "problem.md"]
    assert "slate.json" in staged["adversarial-reviewer"]
    # their writes went nowhere: refused, and the case folder holds none of them
    for role in ("red-team", "adversarial-reviewer"):
        [after] = [b for b in inv.requests(role) if RequestView.from_body(b).turn == 1][:1]
        results = [c for c in after["messages"][-1]["content"] if c.get("type") == "tool_result"]
        assert results[0].get("is_error") and results[1].get("is_error"), results[:2]
    assert not (case / "REVIEWER-WROTE.md").exists()
    assert not list(inv.root.rglob("scratch.md"))
    # the investigator's own notes survive the publish of ANALYSIS.md
    analysis = (case / "ANALYSIS.md").read_text()
    assert NOTES in analysis and analysis.index("`exit=complete") < analysis.index(NOTES)
    inv.assert_no_bash()


@pytest.mark.parametrize("runtime", BOTH)
def test_a_reviewer_cannot_read_back_into_the_case_or_the_transcripts(inv: Investigation) -> None:
    _plant(inv)

    inv.investigate()

    red_seen = _seen(_bodies(inv, "red-team", first_only=False))
    adv_seen = _seen(_bodies(inv, "adversarial-reviewer", first_only=False))
    for hidden in (CASE_FILE, SLATE, ROUND_ONE, NOTES, *INVESTIGATOR_PROMPT):
        assert hidden not in red_seen, f"the red team read {hidden!r}"
    for hidden in (CASE_FILE, *INVESTIGATOR_PROMPT):
        assert hidden not in adv_seen, f"the adversarial reviewer read {hidden!r}"
