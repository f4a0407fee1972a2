"""L0: case ids and the legal moves of a case's status."""

from __future__ import annotations

import pytest

from harness_cli import clock
from harness_cli.errors import InputError, StateConflict
from harness_cli.workspace.case import TRANSITIONS, Case, derive_case_id, validate_case_id


def _case(status: str = "new") -> Case:
    now = clock.now()
    return Case(
        id="AAA-1",
        project="team-a",
        status=status,
        created_at=now,  # type: ignore[arg-type]
        updated_at=now,
    )


def test_case_id_is_the_jira_key_else_stable_from_channel_and_ts() -> None:
    assert derive_case_id(jira="AAA-12", channel="C1", ts="1.2") == "AAA-12"
    a = derive_case_id(jira=None, channel="C0SUPPORT", ts="1732870000.000100")
    assert a == derive_case_id(jira=None, channel="C0SUPPORT", ts="1732870000.000100")
    assert a != derive_case_id(jira=None, channel="C0SUPPORT", ts="1732870000.000200")


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", ".hidden", "x" * 200])
def test_unsafe_case_ids_are_refused(bad: str) -> None:
    with pytest.raises(InputError):
        validate_case_id(bad)


def test_legal_path_of_one_ticket() -> None:
    case = _case()
    for status in (
        "investigating",
        "awaiting_approval",
        "approved",
        "in_progress",
        "mr_open",
        "in_progress",
        "mr_open",
        "merged",
        "closed",
    ):
        assert case.move(status, by="test") is True
    assert [h.to for h in case.history][-1] == "closed"
    assert case.history[0].frm == "new"


def test_same_status_is_an_idempotent_no_op() -> None:
    case = _case("investigating")
    assert case.move("investigating") is False
    assert case.history == []


def test_illegal_transition_is_refused_with_the_allowed_ones() -> None:
    case = _case("merged")
    with pytest.raises(StateConflict) as err:
        case.move("investigating")
    assert "closed" in err.value.line()
    assert case.status == "merged"


def test_every_status_has_a_row_and_every_target_is_a_status() -> None:
    statuses = set(TRANSITIONS)
    for targets in TRANSITIONS.values():
        assert targets <= statuses
    # from every status there is a way to close
    assert all("closed" in t for s, t in TRANSITIONS.items() if s != "closed")


def test_history_serialises_with_the_from_alias() -> None:
    case = _case()
    case.move("investigating")
    dumped = case.model_dump(mode="json", by_alias=True)
    assert dumped["history"][0]["from"] == "new"
    assert Case.model_validate(dumped).history[0].frm == "new"
