"""L1/L2: dispatch writes its payload first, then starts the workflow with the chosen backend."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch.backends import choose_backend
from harness_cli.dispatch.payload import Payload, Trigger, load_payload, write_payload_once
from harness_cli.errors import ConfigError


def _payload(workflow: str = "investigate", case_id: str = "AAA-1") -> Payload:
    return Payload(
        workflow=workflow,
        case_id=case_id,
        case_dir=f"/ws/case-workspaces/{case_id}",
        channel="C0SUPPORT",
        thread_ts="1.000100",
        trigger=Trigger(kind="new_ticket", ts="1.000100", user="U0CUSTOMER"),
    )


def test_record_writes_the_payload_and_starts_nothing(tmp_path: Path) -> None:
    done = dispatch.dispatch(_payload(), backend="record")
    assert done.started is False
    assert done.payload_file.parent == tmp_path / "harness-home" / "payloads"
    assert done.payload_file.name.endswith("-investigate-AAA-1.json")
    data = json.loads(done.payload_file.read_text())
    for key in ("workflow", "case_id", "case_dir", "channel", "thread_ts", "trigger"):
        assert key in data
    assert data["trigger"] == {"kind": "new_ticket", "ts": "1.000100", "user": "U0CUSTOMER"}
    assert load_payload(done.payload_file).case_id == "AAA-1"


def test_backend_choice_honours_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DISPATCH", "inline")
    assert choose_backend("local") == "inline"
    monkeypatch.setenv("HARNESS_DISPATCH", "cron")
    with pytest.raises(ConfigError, match="not a dispatch backend"):
        choose_backend()


def test_inline_runs_the_workflow_in_process_and_returns_its_code() -> None:
    done = dispatch.dispatch(_payload("gap-patterns-not-a-workflow"), backend="inline")
    # an unknown command is a usage error (2): the payload still went to disk first
    assert done.exit_code == 2 and done.payload_file.exists()
    done = dispatch.dispatch(_payload("investigate", "NOPE-1"), backend="inline")
    assert done.exit_code == 2  # the workflow ran here and said "no case 'NOPE-1'"


def test_local_starts_a_detached_process_with_its_own_log(tmp_path: Path) -> None:
    done = dispatch.dispatch(_payload("investigate", "LOC-1"), backend="local")
    assert done.started
    log = Path(done.detail.removeprefix("log "))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and log.read_text():
            break
        time.sleep(0.1)
    # the detached run wrote its own one-line answer (no config here) to its own log file
    assert log.read_text().startswith("harness: config folder")


def test_payloads_sort_by_time_and_never_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_NOW", "2026-11-01T10:00:00Z")  # one instant for all of them
    no_ts = _payload().model_copy(update={"trigger": Trigger(kind="admin_command")})
    files = [dispatch.dispatch(no_ts.model_copy(), backend="record").payload_file for _ in range(5)]
    assert len(set(files)) == 5
    assert sorted(files) == files
    events = [
        _payload().model_copy(update={"trigger": Trigger(kind="operator_reply", ts=ts)})
        for ts in ("1796000000.000100", "1796000000.000100", "1796000001.000200")
    ]
    written = [dispatch.dispatch(p, backend="record") for p in events]
    assert [w.duplicate for w in written] == [False, True, False]
    assert len({w.payload_file for w in written}) == 2


def test_the_same_event_is_dispatched_once_and_started_once(tmp_path: Path) -> None:
    first = dispatch.dispatch(_payload(), backend="record")
    again = dispatch.dispatch(_payload(), backend="record")
    assert again.duplicate and again.payload_file == first.payload_file
    # a payload written by a run that died before starting it is started by the retry, once
    folder = tmp_path / "harness-home" / "payloads"
    assert [p.name for p in folder.glob("*.json")] == [first.payload_file.name]
    other = _payload(case_id="AAA-2")
    path, existed = write_payload_once(other)
    assert not existed
    started = dispatch.dispatch(_payload(case_id="AAA-2"), backend="inline")
    assert started.started and not started.duplicate and started.payload_file == path
    assert dispatch.dispatch(_payload(case_id="AAA-2"), backend="inline").duplicate
