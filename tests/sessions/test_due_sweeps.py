"""``consolidate --due`` and ``finalize --due`` open one work session per case they act on,
through the shared workflow entry (issue #19, session 2 point 2): a case another machine holds
is denied, naming the holder, and the sweep goes on with the others. Two HARNESS_HOMEs with
clones of one workspace remote, the CLI in-process, real git."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from harness_cli.memory import transcripts
from harness_cli.memory.transcripts import TranscriptMeta
from tests.improvement.conftest import new_case
from tests.improvement.corpus import gap_report
from tests.sessions.conftest import Machine, call, here

T0 = "2026-11-29T08:00:00+00:00"
LATER = "2026-11-29T13:00:00+00:00"  # past finalize_idle_hours (4 h)


def _as(monkeypatch: pytest.MonkeyPatch, machine: Machine, now: str) -> None:
    for key, value in {**machine.env, "HARNESS_NOW": now}.items():
        monkeypatch.setenv(key, value)


def _holder(machine: Machine) -> str:
    return f"harness/investigate/{(machine.home / 'machine-id').read_text().strip()}"


def _records(machine: Machine) -> list[dict[str, object]]:
    folder = machine.home / "sessions"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_finalize_due_is_denied_on_a_case_another_machine_holds_and_finalizes_the_rest(
    machines, cli, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    a, b = machines(2)
    with monkeypatch.context() as scoped:
        _as(scoped, b, T0)
        folders = {}
        for case_id in ("AAA-31", "AAA-32"):
            folder = folders[case_id] = new_case(case_id, status="closed")
            (folder / "gap_report_001.md").write_text(
                gap_report(confidence=20, created_at="2026-11-29T07:00:00Z")
            )
    held = here(
        cli, monkeypatch, a, "session", "open", "--workflow", "investigate", "--case", "AAA-31",
        "--task", "a second look", now=LATER,
    )  # fmt: skip
    code, out, err = call(cli, monkeypatch, b, "finalize", "--due", "--json", now=LATER)
    assert code == 4, err + out  # a reservation held: refused by policy, the rest done
    cases = {c["case_id"]: c for c in json.loads(out.splitlines()[-1])["data"]["cases"]}
    assert cases["AAA-31"]["status"] == "denied"
    assert cases["AAA-31"]["message"] == (
        'session denied by preflight gate: "case AAA-31" is being worked on by '
        f"{_holder(a)} (a second look)"
    )
    assert cases["AAA-32"]["status"] == "no_gaps"
    # the case it acted on ran in its own session, opened and closed; none for the denied one
    sessions = [(r["workflow"], r["case_id"], r["state"]) for r in _records(b)]
    assert sessions == [("finalize", "AAA-32", "closed")]
    assert not (folders["AAA-31"] / "finalize.json").exists()
    assert (folders["AAA-32"] / "finalize.json").exists()
    # once the holder is done the next sweep finalizes it
    assert call(cli, monkeypatch, a, "session", "close", held["id"], now=LATER)[0] == 0
    code, out, err = call(cli, monkeypatch, b, "finalize", "--due", "--json", now=LATER)
    assert code == 0, err + out
    cases = {c["case_id"]: c for c in json.loads(out.splitlines()[-1])["data"]["cases"]}
    assert cases["AAA-31"]["status"] == "no_gaps"
    assert here(cli, monkeypatch, b, "session", "list", now=LATER)["live"] == []


def test_consolidate_due_is_denied_on_a_case_another_machine_holds_naming_it(
    machines, cli, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    a, b = machines(2)
    with monkeypatch.context() as scoped:
        _as(scoped, b, T0)
        folder = new_case("AAA-33", status="closed")  # closed with a turn unfolded: it fires
        at = datetime(2026, 11, 29, 7, tzinfo=UTC)
        transcripts.write(
            folder, TranscriptMeta(turn=1, case_id="AAA-33", at=at, trigger="operator_reply"), "hi"
        )
    here(
        cli, monkeypatch, a, "session", "open", "--workflow", "investigate", "--case", "AAA-33",
        "--task", "a second look", now=LATER,
    )  # fmt: skip
    code, out, err = call(cli, monkeypatch, b, "consolidate", "--due", "--json", now=LATER)
    assert code == 4, err + out
    data = json.loads(out.splitlines()[-1])
    assert data["data"]["denied"] == [
        'AAA-33: session denied by preflight gate: "case AAA-33" is being worked on by '
        f"{_holder(a)} (a second look)"
    ]
    assert data["data"]["done"] == [] and data["data"]["failed"] == []
    assert transcripts.unconsolidated(folder)  # nothing folded in, nothing changed
    assert [r["state"] for r in _records(b)] == []  # denied before any session was held
