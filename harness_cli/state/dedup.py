"""The bounded, expiring set of message keys already dispatched (``socket-dedup``).

Shared by ``listen`` and ``poll-slack`` so the two never dispatch the same message twice; the
frozen-cursor poller re-reads the same window until something comes back, and this set is what
filters the repeats. Bounded (oldest out first) and expiring, so it cannot grow for months.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness_cli import clock
from harness_cli.state.files import socket_dedup
from harness_cli.state.models import DedupSet


def message_key(channel: str, ts: str) -> str:
    return f"{channel}/{ts}"


def claim(keys: Iterable[str], *, ttl_hours: float, max_entries: int) -> list[str]:
    """Atomically mark ``keys`` as seen; return only those nobody had claimed before (in the
    order given). A caller dispatches exactly the returned keys."""
    now = clock.epoch()
    fresh: list[str] = []
    with socket_dedup().update() as state:
        _expire(state, now)
        for key in keys:
            if key in state.seen or key in fresh:
                continue
            fresh.append(key)
            state.seen[key] = now + ttl_hours * 3600
        _bound(state, max_entries)
    return fresh


def release(keys: Iterable[str]) -> None:
    """Give claims back (the work failed before it was done): the next cycle retries them."""
    drop = set(keys)
    if drop:
        with socket_dedup().update() as state:
            for key in drop:
                state.seen.pop(key, None)


def is_seen(key: str) -> bool:
    expires = socket_dedup().read().seen.get(key)
    return expires is not None and expires > clock.epoch()


def _expire(state: DedupSet, now: float) -> None:
    state.seen = {k: exp for k, exp in state.seen.items() if exp > now}


def _bound(state: DedupSet, max_entries: int) -> None:
    if len(state.seen) > max_entries:
        keep = sorted(state.seen.items(), key=lambda kv: kv[1])[-max_entries:]
        state.seen = dict(keep)
