"""Whose obligation a write is: the idempotency key's first half.

A workflow run (``journal``), an intake message (its ledger key) or an mr-monitor event opens a
scope; every write made inside it is keyed ``<scope>|<purpose>|<target>|<n>``, where ``n``
counts the writes of that purpose to that place so far in the scope. A run that is resumed
after a crash opens the *same* scope (the journal hands it its predecessor's), so its writes
get the same keys: those its predecessor already made are found in the ledger (or, for one
whose answer was lost, at the service) and not made again.

A write made outside any scope gets a key of its own (it is still recorded and retried; only
a rerun of that unscoped work cannot be recognised).
"""

from __future__ import annotations

import contextvars
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Scope:
    name: str
    """E.g. ``investigate:AAA-1:<run>``, ``intake:C0SUPPORT/1700000000.000100``."""
    case_id: str = ""
    retried_by: str = ""
    """Who retries a write of this scope that failed: "" the outbox's flush; ``intake`` the
    per-message lifecycle (which retries the whole message, parks it and tells the operator):
    one mechanism per obligation, never two racing."""
    counts: dict[str, int] = field(default_factory=dict)

    def key(self, purpose: str, target: str) -> str:
        base = f"{purpose}|{target}"
        self.counts[base] = self.counts.get(base, 0) + 1
        return f"{self.name}|{base}|{self.counts[base]}"


_current: contextvars.ContextVar[Scope | None] = contextvars.ContextVar(
    "obligation_scope", default=None
)


def current() -> Scope | None:
    return _current.get()


@contextmanager
def opened(name: str, case_id: str = "", *, retried_by: str = "") -> Iterator[Scope]:
    """Every write inside owes to ``name`` (nested scopes: the innermost wins)."""
    scope = Scope(name, case_id, retried_by=retried_by)
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)


def key_for(purpose: str, target: str, explicit: str | None = None) -> tuple[str, str]:
    """(key, case_id) of a write: ``explicit`` when the caller names the event itself (an
    mr-monitor DM), else the current scope's next key, else a key of its own."""
    scope = current()
    case_id = scope.case_id if scope else ""
    if explicit:
        return f"{explicit}|{purpose}|{target}", case_id
    if scope is not None:
        return scope.key(purpose, target), case_id
    return f"unscoped:{uuid.uuid4().hex}|{purpose}|{target}", case_id
