"""What the loop does when the model misbehaves outside the report's numbers: a malformed
report, writes where it has no business, a short hypothesis slate, a tampered lock."""

from __future__ import annotations

import json
import stat

import pytest

from harness_cli.sandbox.model_script import RequestView
from tests.investigation.conftest import BOTH, CASE, CLI_MARKS, Investigation


@pytest.mark.parametrize("runtime", BOTH)
def test_a_malformed_report_becomes_a_guard_note_not_a_crash(inv: Investigation) -> None:
    inv.script("inv_malformed")
    inv.open_case()

    data = inv.investigate()

    first = inv.iteration(1)
    assert [v["code"] for v in first["verdict"]["violations"]] == ["REPORT"]
    assert "malformed JSON" in first["verdict"]["violations"][0]["message"]
    assert first["verdict"]["decision"] == "continue"
    prompts = inv.prompts()
    notes = inv.assert_guard_notes_at_head(prompts[1], "[REPORT] completion report at line")
    assert "malformed JSON" in notes
    assert str(data["exit_line"]).startswith("exit=complete") and data["iterations"] == 2
    inv.assert_no_bash()


@pytest.mark.parametrize("runtime", BOTH)
def test_writes_outside_the_case_and_to_the_evidence_are_refused_or_reverted(
    inv: Investigation,
) -> None:
    other = inv.open_case("BBB-202")
    case = inv.open_case()
    sops = inv.root / "sops"
    inv.script("inv_tamper", sops=str(sops), other_case=str(other))
    inv.thresholds(max_iterations=1)
    message = (case / "message.json").read_bytes()
    sop = (sops / "team-a" / "SOP.md").read_bytes()

    data = inv.investigate()

    assert str(data["exit_line"]).startswith("exit=timeout")
    assert (case / "message.json").read_bytes() == message
    assert stat.S_IMODE((case / "message.json").stat().st_mode) == 0o444
    assert (sops / "team-a" / "SOP.md").read_bytes() == sop
    assert not (sops / "team-a" / "INJECTED.md").exists()
    [call] = [c for c in inv.iteration(1)["calls"] if c["role"] == "investigator"]
    # the model saw each attempt's outcome in the next turn: that is how it is told
    [after] = [b for b in inv.requests("investigator") if RequestView.from_body(b).turn == 2]
    results = [c for c in after["messages"][-1]["content"] if c.get("type") == "tool_result"]
    assert len(results) == 4
    if inv.runtime == "anthropic":  # refused before anything ran: nothing to put back
        assert all(r["is_error"] for r in results), results
        assert call["reverted"] == []
    else:  # inside its folder the CLI wrote and the guard put message.json back; outside it
        # (acceptEdits) the CLI refused, so there was nothing to put back
        assert not results[0].get("is_error"), results[0]  # the Edit of message.json landed
        reverted = set(call["reverted"])
        assert str(case / "message.json") in reverted
        assert all(r.get("is_error") for r in results[1:]), results
        outside = {str(sops / "team-a" / "INJECTED.md"), str(sops / "team-a" / "SOP.md")}
        assert not outside & reverted
    inv.assert_no_bash()


@pytest.mark.parametrize(
    "runtime",
    [
        pytest.param("claude-code", marks=CLI_MARKS),
        "anthropic",
    ],
)
def test_a_write_into_a_sibling_case_is_refused(inv: Investigation) -> None:
    other = inv.open_case("BBB-202")
    inv.open_case()
    inv.script("inv_tamper", sops=str(inv.root / "sops"), other_case=str(other))
    inv.thresholds(max_iterations=1)

    inv.investigate()

    assert sorted(p.name for p in other.iterdir()) == ["case.json", "message.json"]


@pytest.mark.parametrize("runtime", BOTH)
def test_a_short_slate_is_sent_back_and_a_tampered_lock_is_reported(inv: Investigation) -> None:
    inv.script("inv_precommit")
    inv.thresholds(max_iterations=1)
    case = inv.open_case()

    inv.investigate()

    asked = inv.prompts("precommit")
    assert len(asked) == 2, asked
    first, second = asked
    assert "sent back" not in first
    assert "sent back: the slate has 3 candidates; at least 6 are required" in second
    locked = json.loads((case / "kickoff_precommitment.json").read_text())
    assert len(locked["hypothesis_slate"]) == 6 and locked["digest"]
    assert "## SYSTEM QUALITY GUARD" not in inv.prompts()[0]  # the slate was complete

    original = (case / "kickoff_precommitment.json").read_text()
    locked["hypothesis_slate"][0]["hypothesis"] = "the customer misread the invoice"
    (case / "kickoff_precommitment.json").write_text(json.dumps(locked))
    inv.investigate()

    assert len(inv.prompts("precommit")) == 2  # the lock is reused, never re-asked
    rerun = inv.prompts()[-1]
    inv.assert_guard_notes_at_head(
        rerun, "[PRECOMMIT] kickoff_precommitment.json was changed after it was locked"
    )
    # the original slate is back, and it is what the investigator is shown
    assert json.loads((case / "kickoff_precommitment.json").read_text()) == json.loads(original)
    last = inv.requests("investigator")[-1]
    # the locked slate is part of the role's framing: the user turn's first part (#22)
    shown = json.dumps([last.get("system", ""), last["messages"][0]["content"]])
    assert "the customer misread the invoice" not in shown
    assert "the threshold comparison excludes exactly 10 units" in shown
    inv.assert_no_bash()


def test_a_slate_that_stays_short_starts_the_loop_with_the_shortfall(
    inv: Investigation,
) -> None:
    inv.script("inv_precommit")
    inv.thresholds(max_iterations=1)
    inv.open_case(text="STUBBORN-SLATE: bulk discount missing at 10 units")

    inv.investigate()

    assert len(inv.prompts("precommit")) == 3  # asked, sent back twice, then locked as is
    locked = json.loads((inv.case_dir(CASE) / "kickoff_precommitment.json").read_text())
    assert len(locked["hypothesis_slate"]) == 3
    inv.assert_guard_notes_at_head(inv.prompts()[0], "[PRECOMMIT] the slate has 3 candidates")
    inv.assert_no_bash()
