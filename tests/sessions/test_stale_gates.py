"""A gate ref left by a session cleaned up as stale is deleted by whoever cleans it up (issue
#19, session 2 point 4), on its lease: a taker that moved the gate meanwhile is never lost.
Real git on one bare workspace remote; two machines through the CLI."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness_cli.sessions.board import Board
from harness_cli.sessions.model import Element, Hold, ScopeDoc
from harness_cli.sessions.policy import WorkflowPolicy
from harness_cli.sessions.reservations import acquire, gate_ref, hold_ref, look, renew
from tests.sessions.conftest import call, here

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _refs(remote: str) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-remote", remote.removeprefix("file://"), "refs/harness/*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split("\t")[1] for line in listed.splitlines()]


def test_the_gate_of_a_stale_session_is_deleted_by_the_machine_that_cleans_it_up(
    machines, cli, monkeypatch, remote: str
) -> None:  # type: ignore[no-untyped-def]
    a, b = machines(2)
    killed = a.run(
        "investigate",
        "AAA-9",
        now="2026-03-02T09:00:00+00:00",
        extra={"HARNESS_CRASH_AT": "session.opened"},
    )
    assert killed[0] == -9, killed
    assert gate_ref("case:AAA-9") in _refs(remote)
    # B has seen A's hold (one read); past A's heartbeat, B works on another case: its open
    # cleans A's hold up, gate included
    seen = here(cli, monkeypatch, b, "session", "list", now="2026-03-02T09:04:00+00:00")
    assert [h["case_id"] for h in seen["live"]] == ["AAA-9"]
    opened = here(
        cli,
        monkeypatch,
        b,
        "session",
        "open",
        "--workflow",
        "investigate",
        "--case",
        "BBB-1",
        now="2026-03-02T09:05:01+00:00",
    )
    left = _refs(remote)
    assert not [r for r in left if r.startswith(gate_ref("case:AAA-9").rsplit("/", 1)[0])], left
    code, out, err = call(
        cli, monkeypatch, b, "session", "close", opened["id"], now="2026-03-02T09:06:00+00:00"
    )
    assert code == 0, err + out
    assert _refs(remote) == []  # nothing is left behind for ever


class _Interleaved(Board):
    """A board that lets another runner act between its read and its push (once)."""

    def __init__(self, local: Path, remote: str, before_push: Callable[[], None]) -> None:
        super().__init__(local, remote)
        self.before_push: Callable[[], None] | None = before_push

    def write(
        self, changes: dict[str, tuple[str, ScopeDoc | None]], *, atomic: bool = True
    ) -> dict[str, str] | None:
        if self.before_push is not None:
            run, self.before_push = self.before_push, None
            run()
        return super().write(changes, atomic=atomic)


def _hold(name: str, elements: list[Element], now: datetime) -> Hold:
    return Hold(
        session=f"{name}-session",
        name=f"harness/dev-agent/{name}",
        workflow="dev-agent",
        machine=name,
        elements=elements,
        opened_at=now,
        heartbeat_at=now,
        expires_at=now + timedelta(minutes=5),
    )


def test_a_stale_gate_moved_by_a_taker_between_read_and_push_is_not_deleted(
    tmp_path: Path, remote: str
) -> None:
    billing = [Element.repo("acme/billing", "src/")]
    a = Board(tmp_path / "a.git", remote)
    dead = _hold("ma", billing, T0)
    assert acquire(a, dead, WorkflowPolicy(), now=T0, machine="ma", attempts=4)[1] is not None
    later = T0 + timedelta(minutes=6)  # ma's hold is stale now; its gate holds nothing
    c = Board(tmp_path / "c.git", remote)
    taker = _hold("mc", billing, later)
    took: list[object] = []

    def c_takes_billing() -> None:
        took.append(acquire(c, taker, WorkflowPolicy(), now=later, machine="mc", attempts=4)[1])

    b = _Interleaved(tmp_path / "b.git", remote, c_takes_billing)
    look(b, later, "mb")  # b has read the stale hold and its gate
    other = _hold("mb", [Element.case("BBB-2")], later)
    verdict, held_b = acquire(b, other, WorkflowPolicy(), now=later, machine="mb", attempts=4)
    assert verdict.decision == "allow" and held_b is not None
    assert took and took[0] is not None
    # the gate b meant to delete had moved to the taker: b's push failed on its lease, b read
    # again and kept the taker's gate and hold
    refs = _refs(remote)
    assert gate_ref("repo:acme/billing") in refs
    assert hold_ref("repo:acme/billing", taker.session) in refs
    assert hold_ref("repo:acme/billing", dead.session) not in refs
    assert {h.session for h in look(b, later, "mb").live} == {taker.session, other.session}
    assert renew(b, held_b, now=later, machine="mb", attempts=4, release=True)
    assert renew(c, took[0], now=later, machine="mc", attempts=4, release=True)  # type: ignore[arg-type]
    assert _refs(remote) == []
