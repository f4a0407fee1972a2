"""#34 item 14: an ordinary review gets a "Done, updated" reply after every reviewer note once
a real push carries the change, and the review round budget stops reply loops, not reviews.

Root causes found: (1) the agent's single ``reply`` is used only when the round has one
discussion — a round with two discussions pushed its commit and answered neither; (2) every
round counted against the MR's budget of 4 a day, so the fifth note of an ordinary review was
held. Now a discussion the agent did not answer by id hears the pushed commits, and only a
note written after the harness's own reply in its discussion (the shape of a loop) counts."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.delivery.desk import Desk


def _unanswered(desk: Desk) -> list[str]:
    """Reviewer notes with no harness reply after them in their discussion."""
    left = []
    for d in desk.discussions():
        notes = [n for n in d.notes if not n.system]
        for i, n in enumerate(notes):
            if n.author == "harness-bot":
                continue
            if not any(m.author == "harness-bot" for m in notes[i + 1 :]):
                left.append(f"{d.id[:8]}: {n.body}")
    return left


def _open_mr(desk: Desk, case_id: str) -> None:
    desk.force_ci("success", times=20)
    desk.approved_case(case_id)
    assert desk.task(case_id)["data"]["mr"]["iid"] == 1
    desk.cycle()


def test_three_notes_in_one_discussion_and_one_in_another_are_all_answered(desk: Desk) -> None:
    _open_mr(desk, "REV-34")
    first = desk.note(1, "[scenario: one-reply] record this round somewhere")
    desk.cycle()
    desk.run_dispatched()
    desk.note(1, "[scenario: one-reply] and the date too", reply_to=first)
    desk.cycle()
    desk.run_dispatched()
    desk.note(1, "[scenario: one-reply] and who asked", reply_to=first)
    desk.note(1, "[scenario: one-reply] what about the rounding?", author="bob")
    desk.cycle()
    [result] = desk.run_dispatched()
    pushed = result["data"]["pushed_sha"]
    assert pushed and desk.mr()["sha"] == pushed  # the third round's commit is on the MR
    assert _unanswered(desk) == []
    last = [d.notes[-1].body for d in desk.discussions() if not d.notes[-1].system]
    assert f"Done, updated in {pushed[:8]}: pushed Note the reviewers' points" in last[-1]


def test_an_ordinary_review_of_ten_notes_is_answered_past_the_round_budget(desk: Desk) -> None:
    _open_mr(desk, "REV-10")
    for n in range(10):
        desk.note(1, f"[scenario: one-reply] point {n}", author=("alice", "bob")[n % 2])
        desk.cycle()
        assert len(desk.run_dispatched()) == 1, f"note {n} was not taken up"
    assert _unanswered(desk) == []
    assert not [n for n in desk.mr()["notes"] if "review rounds" in n["body"]]


def test_a_reply_loop_still_stops_at_the_budget(desk: Desk, tmp_path: Path) -> None:
    config = tmp_path / "agent-config" / "harness.yaml"
    data = yaml.safe_load(config.read_text())
    data["monitor"]["review_round_budget"] = 2
    config.write_text(yaml.safe_dump(data))
    _open_mr(desk, "LOOP-1")
    first = desk.note(1, "[scenario: one-reply] please note it", author="alice")
    ran = 0
    for n in range(5):
        desk.cycle()
        ran += len(desk.run_dispatched())
        desk.note(1, f"[scenario: one-reply] and again {n}", author="alice", reply_to=first)
    desk.cycle()
    ran += len(desk.run_dispatched())
    assert ran == 3  # the first answer, then the budget's two follow-up rounds
    notices = [n for n in desk.mr()["notes"] if "review rounds" in n["body"]]
    assert len(notices) == 1
