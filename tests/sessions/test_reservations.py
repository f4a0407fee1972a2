"""Reservations every runner sees, taken atomically on the workspace remote (issue #19 points
1–2): machines racing for one case and one repo element get exactly one winner over many seeds,
the losers named the holder; a SIGKILLed holder is released once its heartbeat expires, never
before. Real git everywhere: the compare-and-swap is the remote's own ref update."""

from __future__ import annotations

import random
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from harness_cli.sessions.board import Board
from harness_cli.sessions.model import Element, Hold
from harness_cli.sessions.policy import WorkflowPolicy
from harness_cli.sessions.reservations import Held, acquire, look, renew
from tests.sessions.conftest import Machine, call, here

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _hold(i: int, elements: list[Element], now: datetime) -> Hold:
    return Hold(
        session=f"m{i}-{random.getrandbits(32):08x}",
        name=f"harness/dev-agent/m{i}",
        workflow="dev-agent",
        machine=f"m{i}",
        pid=0,
        task=f"task of m{i}",
        elements=elements,
        exclusive=True,
        opened_at=now,
        heartbeat_at=now,
        expires_at=now + timedelta(minutes=5),
    )


def test_three_boards_racing_for_overlapping_elements_get_exactly_one_winner_every_seed(
    tmp_path: Path, remote: str
) -> None:
    policy = WorkflowPolicy()
    paths = ["src/invoice/", "src/invoice/rounding.py", "src/", "src/invoice/*.py", ""]
    for seed in range(20):
        rnd = random.Random(seed)
        boards = [Board(tmp_path / f"board-{seed}-{i}.git", remote) for i in range(3)]
        case = Element.case(f"AAA-{seed}")
        wanted = [
            [case, Element.repo("acme/billing", rnd.choice(paths))]
            if rnd.random() < 0.7
            else [case]
            for _ in range(3)
        ]
        holds = [_hold(i, wanted[i], T0) for i in range(3)]
        start = threading.Barrier(3)
        verdicts: list[str] = ["?"] * 3
        reasons: list[list[str]] = [[] for _ in range(3)]
        held: list[Held | None] = [None] * 3

        def race(
            i: int,
            start: threading.Barrier = start,
            boards: list[Board] = boards,
            holds: list[Hold] = holds,
            held: list[Held | None] = held,
            verdicts: list[str] = verdicts,
            reasons: list[list[str]] = reasons,
        ) -> None:
            start.wait()
            verdict, held[i] = acquire(
                boards[i], holds[i], policy, now=T0, machine=f"m{i}", attempts=8
            )
            verdicts[i], reasons[i] = verdict.decision, verdict.reasons

        threads = [threading.Thread(target=race, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert verdicts.count("allow") == 1, (seed, verdicts)
        winner = verdicts.index("allow")
        for i in range(3):
            if i != winner:
                assert verdicts[i] == "deny"
                assert (
                    f"is being worked on by harness/dev-agent/m{winner} (task of m{winner})"
                    in reasons[i][0]
                )
                assert reasons[i][0].startswith("session denied by preflight gate: ")
        snap = look(boards[0], T0, "x")
        assert [h.session for h in snap.live] == [holds[winner].session]
        won = held[winner]
        assert won is not None
        assert renew(boards[winner], won, now=T0, machine=f"m{winner}", attempts=8, release=True)


def test_release_heartbeat_and_expiry_on_the_remote(tmp_path: Path, remote: str) -> None:
    a, b = Board(tmp_path / "a.git", remote), Board(tmp_path / "b.git", remote)
    element = [Element.repo("acme/billing", "src/invoice/")]
    first = _hold(1, element, T0)
    verdict, held = acquire(a, first, WorkflowPolicy(), now=T0, machine="m1", attempts=4)
    # a board that never read reads first (fetch + push); then its cached copy is current
    assert verdict.decision == "allow" and held is not None and a.ops == 2
    # a heartbeat at +4 min pushes the expiry to +9 min: one push, no fetch
    later = T0 + timedelta(minutes=4)
    assert renew(
        a,
        held,
        now=later,
        machine="m1",
        attempts=4,
        update={"heartbeat_at": later, "expires_at": later + timedelta(minutes=5)},
    )
    assert a.ops == 3
    at_8 = T0 + timedelta(minutes=8)
    second = _hold(2, [Element.repo("acme/billing", "src/invoice/tax.py")], at_8)
    assert (
        acquire(b, second, WorkflowPolicy(), now=at_8, machine="m2", attempts=4)[0].decision
        == "deny"
    )
    at_10 = T0 + timedelta(minutes=10)  # heartbeat stopped: stale, cleaned by the next runner
    verdict, held_b = acquire(b, second, WorkflowPolicy(), now=at_10, machine="m2", attempts=4)
    assert verdict.decision == "allow" and held_b is not None
    # the late holder finds it lost its hold (it was cleaned up), and says so
    assert not renew(a, held, now=at_10, machine="m1", attempts=4, update={"heartbeat_at": at_10})
    assert renew(b, held_b, now=at_10, machine="m2", attempts=4, release=True)
    assert look(a, at_10, "m1").live == []
    assert (
        subprocess.run(
            ["git", "ls-remote", remote.removeprefix("file://"), "refs/harness/*"],
            capture_output=True,
            text=True,
        ).stdout
        == ""
    )


def test_machines_racing_through_the_cli_get_one_winner_and_the_losers_name_it(
    machines, cli, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    trio: list[Machine] = machines(3)
    for seed in range(2):
        args = (
            "session",
            "open",
            "--workflow",
            "dev-agent",
            "--case",
            f"AAA-{seed}",
            "--repo",
            "acme/billing",
            "--path",
            random.Random(seed).choice(["src/invoice/", "src/invoice/round.py"]),
            "--task",
            "fix rounding",
            "--json",
        )
        procs = [m.popen(*args) for m in trio]
        done = [(p.wait(timeout=60), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
        codes = [c for c, _, _ in done]
        assert sorted(codes) == [0, 4, 4], done
        winner = trio[codes.index(0)]
        machine_id = (winner.home / "machine-id").read_text().strip()
        for code, out, err in done:
            if code == 4:
                assert (
                    f"is being worked on by harness/dev-agent/{machine_id} (fix rounding)"
                    in out + err
                )
        listed = here(cli, monkeypatch, trio[0], "session", "list")["live"]
        assert [h["name"] for h in listed] == [f"harness/dev-agent/{machine_id}"]
        import json

        session_id = json.loads(done[codes.index(0)][1])["data"]["id"]
        assert call(cli, monkeypatch, winner, "session", "close", session_id)[0] == 0
        assert here(cli, monkeypatch, trio[1], "session", "list")["live"] == []


def test_a_sigkilled_holder_is_released_after_its_heartbeat_expires_never_before(
    machines, cli, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    a, b = machines(2)
    t0 = "2026-03-02T09:00:00+00:00"
    killed = a.run("investigate", "AAA-7", now=t0, extra={"HARNESS_CRASH_AT": "session.opened"})
    assert killed[0] == -9, killed
    holder = f"harness/investigate/{(a.home / 'machine-id').read_text().strip()}"
    before = call(cli, monkeypatch, b, "investigate", "AAA-7", now="2026-03-02T09:04:59+00:00")
    assert before[0] == 4, before
    assert (
        f'session denied by preflight gate: "case AAA-7" is being worked on by {holder}'
        in before[2]
    )
    assert not (b.workspace / "case-workspaces" / "AAA-7").exists()  # nothing cloned or changed
    assert (
        here(cli, monkeypatch, b, "session", "list", now="2026-03-02T09:04:59+00:00")["live"][0][
            "name"
        ]
        == holder
    )
    after = here(cli, monkeypatch, b, "session", "list", now="2026-03-02T09:05:00+00:00")
    assert after["live"] == [] and len(after["stale"]) == 1
    opened = call(
        cli,
        monkeypatch,
        b,
        "session",
        "open",
        "--workflow",
        "investigate",
        "--case",
        "AAA-7",
        now="2026-03-02T09:05:01+00:00",
    )
    assert opened[0] == 0, opened


def test_the_dead_holders_own_machine_releases_it_at_once(machines, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    (a,) = machines(1)
    t0 = "2026-03-02T09:00:00+00:00"
    assert (
        a.run("investigate", "AAA-8", now=t0, extra={"HARNESS_CRASH_AT": "session.opened"})[0] == -9
    )
    # same machine, one second later: its process is gone, so the hold is stale already
    listed = here(cli, monkeypatch, a, "session", "list", now="2026-03-02T09:00:01+00:00")
    assert listed["live"] == [] and len(listed["stale"]) == 1


def test_a_release_after_another_session_took_the_same_repository_is_one_push(
    tmp_path: Path, remote: str
) -> None:
    """Issue #19 goal (≤ 3 remote operations per dispatch): the repository's ref moved under
    the first holder (a second session took another path of it); its heartbeat and release
    still cost one push each, no fetch, and the remote ends empty."""
    a, b = Board(tmp_path / "a.git", remote), Board(tmp_path / "b.git", remote)
    first = _hold(1, [Element.repo("acme/billing", "src/invoice/")], T0)
    second = _hold(2, [Element.repo("acme/billing", "docs/")], T0)
    _, held_a = acquire(a, first, WorkflowPolicy(), now=T0, machine="m1", attempts=4)
    look(b, T0, "m2")  # b has read the board once (its copy shows first's hold)
    ops = b.ops
    verdict, held_b = acquire(b, second, WorkflowPolicy(), now=T0, machine="m2", attempts=4)
    assert verdict.decision == "allow" and held_a is not None and held_b is not None
    assert b.ops == ops + 1  # decided on its current copy: the open is one push
    assert {h.session for h in look(b, T0, "m2").live} == {first.session, second.session}
    ops = a.ops
    assert renew(a, held_a, now=T0, machine="m1", attempts=4, update={"heartbeat_at": T0})
    assert renew(a, held_a, now=T0, machine="m1", attempts=4, release=True)
    assert a.ops == ops + 2
    assert [h.session for h in look(a, T0, "m1").live] == [second.session]
    ops = b.ops
    assert renew(b, held_b, now=T0, machine="m2", attempts=4, release=True)
    assert b.ops == ops + 1
    listed = subprocess.run(
        ["git", "ls-remote", remote.removeprefix("file://"), "refs/harness/*"],
        capture_output=True,
        text=True,
    )
    assert listed.stdout == ""


def test_a_lost_race_costs_its_push_and_the_read_that_names_the_winner(
    tmp_path: Path, remote: str
) -> None:
    """Session 2: losers cheaper. Both boards have read the (empty) remote; a takes the case in
    one push; b, deciding on its copy, pushes, loses on the gate's lease, reads once and is
    denied naming a — two remote operations, where a racing loser used to read, push, lose
    and read again (three). The price: a loser arriving after the winner landed also pays
    two (it used to pay one read)."""
    a, b = Board(tmp_path / "a.git", remote), Board(tmp_path / "b.git", remote)
    look(a, T0, "m1"), look(b, T0, "m2")
    case = [Element.case("AAA-40")]
    ops_a, ops_b = a.ops, b.ops
    first = _hold(1, case, T0)
    assert acquire(a, first, WorkflowPolicy(), now=T0, machine="m1", attempts=4)[1] is not None
    assert a.ops == ops_a + 1
    verdict, held = acquire(
        b, _hold(2, case, T0), WorkflowPolicy(), now=T0, machine="m2", attempts=4
    )
    assert verdict.decision == "deny" and held is None
    assert verdict.reasons == [
        'session denied by preflight gate: "case AAA-40" is being worked on by '
        "harness/dev-agent/m1 (task of m1)"
    ]
    assert b.ops == ops_b + 2
    # b's copy is current now: a second try while a still holds it is one read (never a
    # deny believed from the copy alone)
    ops_b = b.ops
    assert (
        acquire(b, _hold(2, case, T0), WorkflowPolicy(), now=T0, machine="m2", attempts=4)[
            0
        ].decision
        == "deny"
    )
    assert b.ops == ops_b + 1
