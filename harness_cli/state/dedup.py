"""``socket-dedup``: the per-message ledger shared by ``listen`` and ``poll-slack``.

Each message key (``channel/ts``) is in one of three places: ``inflight`` (seen: recorded under a
lease, effects possibly partial), ``done`` (every effect exists), ``parked`` (given up on, the
operator told). The ordering rules live in :mod:`harness_cli.intake.lifecycle`; this module only
keeps the file: every change is one atomic write under its lock, and only when something
changed — a cycle that finds nothing new never writes it.

A lease names its owner (``host:pid:start``); a lease whose owner process is gone is taken
over at once, a live owner's only after ``intake_lease_seconds``. Done keys are pruned only
once no cursor and no live thread can read their message again (see :func:`finish`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from harness_cli import clock
from harness_cli.state.files import socket_dedup
from harness_cli.state.models import DedupSet, InFlight


def message_key(channel: str, ts: str) -> str:
    return f"{channel}/{ts}"


def split_key(key: str) -> tuple[str, float]:
    channel, _, ts = key.rpartition("/")
    try:
        return channel, float(ts)
    except ValueError:
        return channel, 0.0


@dataclass
class Incoming:
    """One message offered to the ledger."""

    key: str
    kind: Literal["top", "reply"]
    thread: str
    message: dict[str, Any]


# -- who holds a lease --------------------------------------------------------------------------
def _start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), so a reused pid is not
    mistaken for the run that took the lease."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]


@cache
def me() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def _alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine's lease (a shared home): only its age can free it
    pid = int(pid_text)
    if pid == os.getpid():
        return owner == me()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not started or _start_time(pid) == started


def is_alive(owner: str) -> bool:
    """Whether the process named ``owner`` (``host:pid:start``) still runs (another host's:
    assumed alive). The run journal uses it too."""
    return bool(owner) and _alive(owner)


def may_take(entry: InFlight, lease_seconds: float) -> bool:
    """Could this run take the entry now (nobody alive holds it, or its lease ran out)?"""
    return _free(entry, lease_seconds, time.time())


def _free(entry: InFlight, lease_seconds: float, now: float) -> bool:
    """May another run take this entry over?"""
    if not entry.owner:
        return True
    if entry.owner == me():
        return False
    return now - entry.leased_at >= lease_seconds or not _alive(entry.owner)


# -- reads --------------------------------------------------------------------------------------
def read() -> DedupSet:
    return socket_dedup().read()


def is_seen(key: str) -> bool:
    """Done, or in flight (someone is on it)."""
    state = read()
    return key in state.done or key in state.inflight


# -- the lifecycle's writes ---------------------------------------------------------------------
def record(items: Iterable[Incoming], *, lease_seconds: float) -> list[tuple[str, InFlight]]:
    """Record ``items`` as seen under this run's lease (one write). Returns what this run now
    holds, in the order given: new keys, and in-flight ones whose lease was free (taken over).
    Done and parked keys, and keys a live run holds, are left alone."""
    now = time.time()
    held: list[tuple[str, InFlight]] = []
    with socket_dedup().update() as state:
        for item in items:
            if item.key in state.done or item.key in state.parked:
                continue
            entry = state.inflight.get(item.key)
            if entry is None:
                entry = InFlight(kind=item.kind, thread=item.thread, message=item.message)
                state.inflight[item.key] = entry
            elif not _free(entry, lease_seconds, now):
                continue
            entry.owner, entry.leased_at = me(), now
            entry.leases += 1
            held.append((item.key, entry.model_copy()))
    return held


def take_over(
    *, lease_seconds: float, snapshot: DedupSet | None = None
) -> list[tuple[str, InFlight]]:
    """Lease every in-flight entry nobody alive holds (a killed or failed run's), oldest first.
    Writes only when there is one (``snapshot``: a read of the file made just before)."""
    now = time.time()
    state = snapshot or read()
    if not any(_free(e, lease_seconds, now) for e in state.inflight.values()):
        return []
    held: list[tuple[str, InFlight]] = []
    with socket_dedup().update() as state:
        for key, entry in state.inflight.items():
            if _free(entry, lease_seconds, now):
                entry.owner, entry.leased_at = me(), now
                entry.leases += 1
                held.append((key, entry.model_copy()))
    held.sort(key=lambda kv: split_key(kv[0])[1])
    return held


def release(
    keys: Iterable[str],
    *,
    error: str = "",
    max_attempts: int | None = None,
    stage: Literal["handled"] | None = None,
    counted: bool = True,
) -> list[tuple[str, InFlight]]:
    """Give leases back so the next cycle retries at once (``stage="handled"``: every effect
    exists, only the commit is left). With ``error`` each counts as a failed attempt; past
    ``max_attempts`` the entry is parked (``counted=False``: the error is kept, no attempt is
    counted — the message waits on a repair, and is retried every cycle). Returns the entries
    parked now."""
    drop = list(dict.fromkeys(keys))
    parked: list[tuple[str, InFlight]] = []
    if not drop:
        return parked
    with socket_dedup().update() as state:
        for key in drop:
            entry = state.inflight.get(key)
            if entry is None or entry.owner != me():
                continue
            entry.owner = ""
            if stage:
                entry.stage = stage
            if error and not counted:  # waiting on something outside (a repair): no attempt
                entry.error = error[:300]
            elif error:
                entry.attempts += 1
                entry.error = error[:300]
                if max_attempts is not None and entry.attempts >= max_attempts:
                    parked.append((key, state.inflight.pop(key)))
                    state.parked[key] = entry
    return parked


def unpark() -> list[str]:
    """Put every parked message back in flight (``poll-slack --retry-parked``)."""
    with socket_dedup().update() as state:
        keys = list(state.parked)
        for key in keys:
            entry = state.parked.pop(key)
            entry.owner, entry.attempts = "", 0
            state.inflight[key] = entry
    return keys


def finish(
    keys: Iterable[str],
    *,
    floors: Mapping[str, float] | None = None,
    ttl_hours: float,
    max_entries: int,
) -> None:
    """``keys`` are done: move them from in flight to done, and prune (one write)."""
    now = int(clock.epoch())
    with socket_dedup().update() as state:
        for key in keys:
            state.inflight.pop(key, None)
            state.done[key] = now
        _prune(state, floors or {}, now - ttl_hours * 3600, max_entries)


def claim(keys: Iterable[str], *, ttl_hours: float, max_entries: int) -> list[str]:
    """Mark ``keys`` done at once; return those nobody had seen (in the order given). For keys
    whose only effect is their own existence, e.g. the harness's own posts."""
    now = int(clock.epoch())
    fresh: list[str] = []
    with socket_dedup().update() as state:
        for key in keys:
            if key in state.done or key in state.inflight or key in fresh:
                continue
            fresh.append(key)
            state.done[key] = now
        if len(state.done) > max_entries:
            _prune(state, {}, now - ttl_hours * 3600, max_entries)
    return fresh


def _prune(state: DedupSet, floors: Mapping[str, float], expired: float, max_entries: int) -> None:
    """A done key goes once it is older than the TTL *and* below every reader of its channel:
    ``floors`` maps a channel to the oldest ts any cursor or live thread of it may still read
    (channels not in it have no reader). Past ``max_entries`` the oldest go first, readable or
    not — the bound holds whatever happens."""

    def readable(key: str) -> bool:
        channel, ts = split_key(key)
        return channel in floors and ts >= floors[channel]

    state.done = {k: at for k, at in state.done.items() if at > expired or readable(k)}
    if len(state.done) > max_entries:
        order = sorted(state.done.items(), key=lambda kv: (readable(kv[0]), kv[1]))
        state.done = dict(order[len(order) - max_entries :])
