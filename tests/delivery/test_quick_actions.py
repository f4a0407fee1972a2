"""#28 R12: GitLab quick actions in agent-written text never run as the harness's user.

GitLab runs ``/approve``, ``/merge``, ``/label``, ``/unassign_reviewer``, ``/close`` … at the
start of a line of an MR description or a note, as whoever sent the text; the sandbox's GitLab
does the same (``sandbox/gitlab_quick_actions.py``). End to end: a dev-agent task whose MR
description carries them, then a review round whose reply does.
"""

from __future__ import annotations

import pytest

from harness_cli.sandbox import gitlab_quick_actions
from harness_cli.services.gitlab import DEFUSED, outgoing
from tests.delivery.desk import Desk

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("forge", ["gitlab"])  # GitHub runs no quick actions in text
def test_quick_actions_in_the_agents_text_reach_gitlab_as_text_only(desk: Desk) -> None:
    desk.box.anthropic.load_script("dev_quick_actions")
    desk.force_ci("success", times=6)
    desk.approved_case("QA-1")

    task = desk.task("QA-1")

    assert task["data"]["mr"]["iid"] == 1, task
    mr = desk.mr()
    assert mr["state"] == "opened" and mr["approved_by"] == [], mr
    assert mr["labels"] == [] and not any(n["system"] for n in mr["notes"]), mr["notes"]
    for line in ("/approve", "/merge", "/label ~shipit", "/unassign_reviewer @alice"):
        assert f"\n{DEFUSED}{line}\n" in mr["description"], mr["description"]  # kept, as text

    desk.cycle()
    desk.note(1, "[scenario: quick] please note this round in the changelog")
    desk.cycle()
    [result] = desk.run_dispatched()
    assert result["data"]["pushed"] is True, result
    mr = desk.mr()
    assert mr["state"] == "opened" and mr["approved_by"] == [], mr
    [reply] = [n["body"] for n in mr["notes"] if n["author"] == "harness-bot" and not n["system"]]
    assert "/approve" in reply and "/close" in reply, reply  # words in a reply, nothing ran


def test_the_emulator_runs_quick_actions_like_gitlab() -> None:
    text = 'Fixed.\n/approve\n/LABEL ~a ~"b c"\n```\n/merge\n```\n  /close\n/usr/bin/env\n'
    kept, commands = gitlab_quick_actions.extract(text)
    assert [(c.name, c.arg) for c in commands] == [("approve", ""), ("label", '~a ~"b c"')]
    assert kept == "Fixed.\n```\n/merge\n```\n  /close\n/usr/bin/env\n"
    assert gitlab_quick_actions.extract(outgoing(text))[1] == []
    assert outgoing(outgoing(text)) == outgoing(text)  # defused once, whatever the retries
