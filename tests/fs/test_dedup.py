"""L1: the shared socket-dedup set — exactly-once claims, expiry, bound, concurrency."""

from __future__ import annotations

import threading

import pytest

from harness_cli.state import dedup, files


def test_claim_returns_only_new_keys_in_order() -> None:
    assert dedup.claim(["C/1", "C/2", "C/1"], ttl_hours=1, max_entries=100) == ["C/1", "C/2"]
    assert dedup.claim(["C/2", "C/3"], ttl_hours=1, max_entries=100) == ["C/3"]
    assert dedup.is_seen("C/1")


def test_entries_expire_by_the_harness_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_NOW", "2026-11-01T00:00:00Z")
    dedup.claim(["C/1"], ttl_hours=1, max_entries=100)
    monkeypatch.setenv("HARNESS_NOW", "2026-11-01T00:59:00Z")
    assert dedup.claim(["C/1"], ttl_hours=1, max_entries=100) == []
    monkeypatch.setenv("HARNESS_NOW", "2026-11-01T01:01:00Z")
    assert dedup.claim(["C/1"], ttl_hours=1, max_entries=100) == ["C/1"]


def test_the_set_is_bounded_oldest_out_first(monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(150):
        monkeypatch.setenv("HARNESS_NOW", f"2026-11-01T00:{i // 60:02d}:{i % 60:02d}Z")
        dedup.claim([f"C/{i}"], ttl_hours=10, max_entries=100)
    seen = files.socket_dedup().read().seen
    assert len(seen) == 100
    assert "C/149" in seen and "C/0" not in seen


def test_poller_and_listener_racing_dispatch_each_message_once() -> None:
    won: list[str] = []
    lock = threading.Lock()

    def racer() -> None:
        for i in range(40):
            got = dedup.claim([f"C/{i}"], ttl_hours=1, max_entries=1000)
            with lock:
                won.extend(got)

    threads = [threading.Thread(target=racer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == sorted(f"C/{i}" for i in range(40))
