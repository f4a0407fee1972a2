"""L1: the shared socket-dedup ledger — exactly-once records, leases taken over from dead runs,
parking, and pruning that never drops what a cursor can still read."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness_cli.state import dedup, files


def _in(key: str) -> dedup.Incoming:
    return dedup.Incoming(key, "top", "", {"ts": key.rpartition("/")[2], "text": "hi"})


def test_claim_returns_only_new_keys_in_order() -> None:
    assert dedup.claim(["C/1", "C/2", "C/1"], ttl_hours=1, max_entries=100) == ["C/1", "C/2"]
    assert dedup.claim(["C/2", "C/3"], ttl_hours=1, max_entries=100) == ["C/3"]
    assert dedup.is_seen("C/1")


def test_a_record_is_held_once_and_done_keys_are_never_offered_again() -> None:
    held = dedup.record([_in("C/1.0"), _in("C/2.0")], lease_seconds=600)
    assert [k for k, _ in held] == ["C/1.0", "C/2.0"]
    assert dedup.record([_in("C/1.0")], lease_seconds=600) == []  # ours already
    dedup.finish(["C/1.0"], ttl_hours=1, max_entries=100)
    assert dedup.record([_in("C/1.0")], lease_seconds=600) == []
    assert "C/1.0" in dedup.read().done and "C/2.0" in dedup.read().inflight


def test_a_dead_runs_lease_is_taken_over_at_once_and_a_live_ones_only_when_it_expires(
    tmp_path: Path,
) -> None:
    script = (
        "from harness_cli.state import dedup\n"
        "dedup.record([dedup.Incoming('C/5.0', 'top', '', {'ts': '5.0'})], lease_seconds=600)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)  # that run is gone now
    [(key, entry)] = dedup.take_over(lease_seconds=600)
    assert key == "C/5.0" and entry.leases == 2 and entry.message["ts"] == "5.0"
    assert dedup.take_over(lease_seconds=600) == []  # ours now, and we are alive
    live = subprocess.Popen(
        [sys.executable, "-c", script.replace("C/5.0", "C/6.0") + "import time; time.sleep(30)"]
    )
    try:
        deadline = time.monotonic() + 20
        while "C/6.0" not in dedup.read().inflight:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert dedup.take_over(lease_seconds=600) == []  # alive: not ours to take
        assert [k for k, _ in dedup.take_over(lease_seconds=0)] == ["C/6.0"]  # hung: taken
    finally:
        live.kill()
        live.wait()


def test_failures_are_retried_then_parked_and_can_be_unparked() -> None:
    dedup.record([_in("C/7.0")], lease_seconds=600)
    for attempt in range(1, 3):
        parked = dedup.release(["C/7.0"], error="boom", max_attempts=3)
        assert parked == [] and dedup.read().inflight["C/7.0"].attempts == attempt
        assert [k for k, _ in dedup.take_over(lease_seconds=600)] == ["C/7.0"]
    [(key, entry)] = dedup.release(["C/7.0"], error="boom", max_attempts=3)
    assert key == "C/7.0" and entry.error == "boom"
    assert "C/7.0" in dedup.read().parked and dedup.take_over(lease_seconds=600) == []
    assert dedup.unpark() == ["C/7.0"]
    assert [k for k, _ in dedup.take_over(lease_seconds=600)] == ["C/7.0"]


def test_done_keys_outlive_the_ttl_while_a_cursor_can_read_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HARNESS_NOW", "2026-11-01T00:00:00Z")
    dedup.record([_in("C/100.0"), _in("C/200.0"), _in("D/50.0")], lease_seconds=600)
    dedup.finish(["C/100.0", "C/200.0", "D/50.0"], ttl_hours=1, max_entries=100)
    monkeypatch.setenv("HARNESS_NOW", "2026-11-04T00:00:00Z")  # three days later
    dedup.finish([], floors={"C": 150.0}, ttl_hours=1, max_entries=100)
    # C/200 is above C's cursor: re-read every cycle, so it stays; the others go
    assert sorted(dedup.read().done) == ["C/200.0"]


def test_the_ledger_is_bounded_what_no_reader_can_see_goes_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for i in range(150):
        monkeypatch.setenv("HARNESS_NOW", f"2026-11-01T00:{i // 60:02d}:{i % 60:02d}Z")
        dedup.claim([f"C/{i}.0"], ttl_hours=10, max_entries=1000)
    dedup.finish([], floors={"C": 140.0}, ttl_hours=10, max_entries=100)
    done = files.socket_dedup().read().done
    assert len(done) == 100
    assert all(f"C/{i}.0" in done for i in range(140, 150))  # readable ones kept
    assert "C/0.0" not in done


def test_a_version_1_file_is_read_as_done_keys(tmp_path: Path) -> None:
    path = tmp_path / "harness-home" / "socket-dedup"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schema_version": 1, "seen": {"C/1.0": 9e9}}))
    assert dedup.read().done == {"C/1.0": 9e9}
    assert dedup.claim(["C/1.0"], ttl_hours=1, max_entries=100) == []


def test_poller_and_listener_racing_hold_each_message_once() -> None:
    won: list[str] = []
    lock = threading.Lock()

    def racer() -> None:
        for i in range(40):
            got = dedup.record([_in(f"C/{i}.0")], lease_seconds=600)
            with lock:
                won.extend(k for k, _ in got)

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # one process: the first racer's lease is "ours" for the others too, so they skip it
    assert sorted(won) == sorted(f"C/{i}.0" for i in range(40))
