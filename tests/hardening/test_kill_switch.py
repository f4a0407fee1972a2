"""L4: the kill switch fails closed. Paused, then oncall-state.json truncated, binary, of the
wrong types, from a newer harness or not readable at all: the harness stays paused (the next
ticket opens its case and is held back), the operator is told once — a DM naming the file and
the fix, and error.log — and only an explicit resume unpauses, writing a good file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import payloads

BAD = {
    "truncated": b'{"schema_version": 1, "paused": true, "paused_u',
    "binary": b"\x00\xff\xfe\x89PNG\r\n\x1a\n" + bytes(range(256)),
    "empty": b"",
    "wrong-types": b'{"schema_version": 1, "paused": "no", "paused_until": [5]}',
    "future-schema": b'{"schema_version": 7, "paused": false, "mode": "quantum"}',
}


def _poll(cli) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("poll-slack", "--json")
    assert code == 0, out + err
    data: dict[str, Any] = json.loads(out)["data"]
    return data


def _warnings(emu: Any) -> list[str]:
    return [m["text"] for m in emu.messages("D0SELF") if "oncall-state.json" in m["text"]]


@pytest.mark.parametrize("variant", sorted(BAD))
def test_a_corrupt_kill_switch_keeps_the_harness_paused_until_resume(
    cli,
    slack_emu,
    harness_ready: Path,
    tmp_path: Path,
    variant: str,  # type: ignore[no-untyped-def]
) -> None:
    state = tmp_path / "harness-home" / "oncall-state.json"
    code, _, err = cli("pause")
    assert code == 0, err
    state.write_bytes(BAD[variant])

    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-11 the export is empty")
    first = _poll(cli)
    assert first["new_cases"] == ["AAA-11"]  # nothing is lost: the case is opened …
    assert first["held_back"] == ["investigate AAA-11"]  # … and held back
    assert payloads(tmp_path, "investigate") == []
    [warning] = _warnings(slack_emu)  # told by DM, with the file and the fix
    assert "harness resume" in warning
    errors = (tmp_path / "harness-home" / "logs" / "error.log").read_text()
    assert "state_unreadable_fail_closed" in errors and "oncall-state.json" in errors

    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-12 and the import too")
    second = _poll(cli)
    assert second["held_back"] == ["investigate AAA-12"]
    assert payloads(tmp_path, "investigate") == []
    assert len(_warnings(slack_emu)) == 1  # told once
    code, out, _ = cli("status", "--json")
    status = json.loads(out)["data"]
    assert code == 0 and status["paused"] is True and "unreadable" in status["by"]

    code, out, err = cli("resume")
    assert code == 0 and "resumed" in out, out + err
    assert json.loads(state.read_text())["paused"] is False  # a good file again
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-13 one more")
    assert _poll(cli)["dispatched"] == ["investigate AAA-13"]
    assert len(_warnings(slack_emu)) == 1


def test_a_kill_switch_unreadable_without_a_pause_holds_too_and_says_so_without_slack(
    cli, harness_ready: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """No Slack to DM (``status`` from a shell): stderr and error.log carry it, once."""
    state = tmp_path / "harness-home" / "oncall-state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_bytes(b'{"paused": fal')
    code, out, err = cli("status", "--json")
    assert code == 0 and json.loads(out)["data"]["paused"] is True
    assert "oncall-state.json" in err and "unreadable" in err
    code, out, err = cli("status", "--json")
    assert "oncall-state.json" not in err  # once
    assert state.read_bytes() == b'{"paused": fal'  # a read never rewrites nor moves it


def test_a_kill_switch_that_is_not_a_file_at_all_holds_the_harness_paused(
    cli, slack_emu, harness_ready: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    state = tmp_path / "harness-home" / "oncall-state.json"
    state.mkdir(parents=True)
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", "AAA-21 the export is empty")
    cli("poll-slack")  # cannot record what it held back there, so that message waits
    assert payloads(tmp_path, "investigate") == []
    _, out, _ = cli("status", "--json")
    assert json.loads(out)["data"]["paused"] is True
    assert len(_warnings(slack_emu)) == 1
