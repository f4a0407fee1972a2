"""Taking, renewing and giving back reservations.

Layout on the remote: each session's hold on a scope is its own ref,
``refs/harness/reservations/v2/<sha1 of scope>/h/<sha1 of session>``, and each scope has a
``…/gate`` ref beside its holds that every acquire on the scope moves. Acquire: read everything
(one fetch), decide with the preflight gate, then one atomic push that moves the gate of every
scope it takes (lease on the gate sha read, or "absent"), creates its hold refs and deletes stale
holds (lease on their sha). Two runners that read the same gate cannot both land: the remote
checks the old value under its ref lock; the loser reads again and decides again. Never "read,
then write" blindly.

Renew and release touch only this session's own refs (and, on release, the gates it moved
last), each on a lease on the sha it wrote, so another session's acquire or release on a shared
repository never makes them fail: a dispatch costs fetch + push to open and one push to close.
Release is one non-atomic push: the hold refs go on their own leases; a gate moved by a later
acquire stays (its last mover deletes it). Only when a hold ref of ours changed under us (it
was cleaned up as stale) is the remote read again. Stale holds (heartbeat expired by
``HARNESS_NOW``, or a dead process of this very machine) are removed in the same push by
whoever acquires next."""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime

from harness_cli.errors import ServiceError
from harness_cli.logs import event
from harness_cli.sessions.board import Board, Entry
from harness_cli.sessions.gate import Verdict, preflight_gate
from harness_cli.sessions.model import REF_PREFIX, Hold, ScopeDoc, scope_ref
from harness_cli.sessions.policy import WorkflowPolicy

log = logging.getLogger("harness.sessions")

Changes = dict[str, tuple[str, ScopeDoc | None]]


def _scope_dir(scope: str) -> str:
    """``refs/harness/reservations/v2/<sha1 of scope>``: beside, not under, the first layout's
    one ref per scope (``…/<sha1>``, which git would not let a ``…/<sha1>/gate`` sit under). A
    hold left in that layout is still read, honoured, and cleaned up once stale."""
    return scope_ref(scope).replace(REF_PREFIX, REF_PREFIX + "v2/", 1)


def gate_ref(scope: str) -> str:
    return _scope_dir(scope) + "/gate"


def hold_ref(scope: str, session: str) -> str:
    return f"{_scope_dir(scope)}/h/{hashlib.sha1(session.encode()).hexdigest()}"


def _is_gate(ref: str) -> bool:
    return ref.endswith("/gate")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_stale(hold: Hold, now: datetime, machine: str) -> bool:
    """Expired, or held by a process of this machine that is gone (only this machine can tell
    a dead process of its own; other machines wait for the heartbeat to expire)."""
    if now >= hold.expires_at:
        return True
    return hold.machine == machine and hold.pid > 0 and not pid_alive(hold.pid)


@dataclass
class Snapshot:
    entries: dict[str, Entry]
    live: list[Hold] = field(default_factory=list)
    stale: list[Hold] = field(default_factory=list)


def look(board: Board, now: datetime, machine: str, *, cached: bool = False) -> Snapshot:
    """Every hold on the remote, split into live and stale (one fetch; ``cached``: none, what
    this board last saw). A session holding several scopes appears once, with the elements of
    all of them."""
    snap = Snapshot(board.snapshot(cached=cached))
    merged: dict[str, Hold] = {}
    for entry in snap.entries.values():
        for hold in entry.doc.holds:
            if hold.session in merged:
                known = merged[hold.session]
                extra = [e for e in hold.elements if e not in known.elements]
                merged[hold.session] = known.model_copy(
                    update={"elements": [*known.elements, *extra]}
                )
            else:
                merged[hold.session] = hold
    for hold in merged.values():
        (snap.stale if is_stale(hold, now, machine) else snap.live).append(hold)
    return snap


def _cleanup(snap: Snapshot, drop: set[str]) -> Changes:
    """Every scope with a stale hold (or a hold of ``drop``) rewritten without it, and every
    gate whose last mover holds nothing any more (it was cleaned up as stale, or died between
    its release's two refs) deleted. Each on a lease on the sha read: a gate moved meanwhile by
    a taker makes the whole push fail and the caller read again, so no taker is ever lost."""
    gone = {h.session for h in snap.stale} | drop
    alive = {h.session for h in snap.live} - drop
    changes: Changes = {}
    for ref, entry in snap.entries.items():
        if _is_gate(ref):
            mover = (entry.doc.model_extra or {}).get("gate")
            if isinstance(mover, str) and mover not in alive:
                changes[ref] = (entry.sha, None)
            continue
        if any(h.session in gone for h in entry.doc.holds) or entry.doc.scope == "?":
            holds = [h for h in entry.doc.holds if h.session not in gone]
            changes[ref] = (
                entry.sha,
                ScopeDoc(scope=entry.doc.scope, holds=holds) if holds else None,
            )
    return changes


@dataclass
class Held:
    """What one runner holds: the scopes it wrote, with the sha and document it wrote."""

    hold: Hold
    refs: dict[str, tuple[str, ScopeDoc]] = field(default_factory=dict)


def acquire(
    board: Board,
    request: Hold,
    policy: WorkflowPolicy,
    *,
    now: datetime,
    machine: str,
    attempts: int,
    approved: bool = False,
) -> tuple[Verdict, Held | None]:
    """Decide and, on allow, hold ``request`` on every scope of its elements — atomically.
    A warn or deny writes only the cleanup of stale holds (if any) and holds nothing.

    The first try decides on this board's cached copy (no remote operation): if that says
    allow, the push goes straight out with leases on the gates as cached, so the remote
    refuses it if any holder came since — an uncontested dispatch opens in one push and a
    lost race costs that push plus the read that names the winner. A warn or deny is never
    believed from the cache (a holder may have left): it is read again first."""
    for attempt in range(attempts):
        ops = board.ops
        snap = look(board, now, machine, cached=attempt == 0)
        verdict = preflight_gate(request, snap.live, policy, approved=approved)
        if board.ops == ops and verdict.decision != "allow":  # decided on the cached copy
            snap = look(board, now, machine)
            verdict = preflight_gate(request, snap.live, policy, approved=approved)
        changes = _cleanup(snap, {request.session})
        mine: dict[str, ScopeDoc] = {}
        if verdict.decision == "allow":
            for scope in sorted({e.scope for e in request.elements}):
                part = request.model_copy(
                    update={"elements": [e for e in request.elements if e.scope == scope]}
                )
                for ref, doc in (
                    (hold_ref(scope, request.session), ScopeDoc(scope=scope, holds=[part])),
                    (gate_ref(scope), _gate_doc(scope, request.session)),
                ):
                    entry = snap.entries.get(ref)
                    mine[ref] = doc
                    changes[ref] = (entry.sha if entry else "", doc)
        written = board.write(changes)
        if written is not None:
            event(
                log,
                "preflight_gate",
                decision=verdict.decision,
                session=request.name,
                case_id=request.case_id,
                reasons=verdict.reasons,
                retries=attempt,
                cleaned=sorted({h.name for h in snap.stale}),
            )
            if verdict.decision != "allow":
                return verdict, None
            return verdict, Held(request, {ref: (written[ref], doc) for ref, doc in mine.items()})
    raise ServiceError(
        f"the reservation refs kept changing under {request.name} ({attempts} attempts)",
        hint="another runner is writing them right now; run again",
    )


def renew(
    board: Board,
    held: Held,
    *,
    now: datetime,
    machine: str,
    attempts: int,
    update: dict[str, object] | None = None,
    release: bool = False,
) -> bool:
    """Heartbeat (apply ``update`` to this session's holds) or release them. Tries the lease
    on what it wrote last first (one push). False: this session held nothing any more (it was
    cleaned up as stale — its heartbeat came too late)."""
    session = held.hold.session
    if update:
        held.hold = held.hold.model_copy(update=update)
    if held.refs:
        mine = {r: v for r, v in held.refs.items() if not _is_gate(r)}
        if release:  # own holds on their leases; the gates we moved last go too, if still ours
            done = board.write({r: (sha, None) for r, (sha, _) in held.refs.items()}, atomic=False)
            if done is not None and all(r in done for r in mine):
                held.refs = {}
                return True
        else:
            fast: Changes = {
                ref: (sha, _rewrite(doc, held.hold, release)) for ref, (sha, doc) in mine.items()
            }
            written = board.write(fast)
            if written is not None:
                gates = {r: v for r, v in held.refs.items() if _is_gate(r)}
                held.refs = {
                    **gates,
                    **{ref: (written[ref], doc) for ref, (_, doc) in fast.items() if doc},
                }
                return True
    for _ in range(attempts):
        snap = look(board, now, machine)
        changes = _cleanup(snap, set())
        found = False
        for ref, entry in snap.entries.items():
            if (
                release
                and _is_gate(ref)
                and entry.doc.model_extra
                and (entry.doc.model_extra.get("gate") == session)
            ):
                changes[ref] = (entry.sha, None)
            if not any(h.session == session for h in entry.doc.holds):
                continue
            found = True
            base = changes[ref][1] if ref in changes else entry.doc
            changes[ref] = (entry.sha, _rewrite(base, held.hold, release) if base else None)
        written = board.write(changes)
        if written is not None:
            kept = {
                ref: (written[ref], doc)
                for ref, (_, doc) in changes.items()
                if doc and any(h.session == session for h in doc.holds)
            }
            gates = {r: v for r, v in held.refs.items() if _is_gate(r) and not release}
            held.refs = {**gates, **kept}
            return found
    raise ServiceError(f"the reservation refs kept changing; session {held.hold.name} not renewed")


def _gate_doc(scope: str, session: str) -> ScopeDoc:
    """The gate's payload names its last mover (so a release can take it along) and carries a
    nonce: two moves never write the same commit, so a lease can never be fooled by A-B-A."""
    return ScopeDoc.model_validate({"scope": scope, "gate": session, "nonce": os.urandom(8).hex()})


def _rewrite(doc: ScopeDoc, hold: Hold, release: bool) -> ScopeDoc | None:
    holds = [h for h in doc.holds if h.session != hold.session]
    if not release:
        old = [h for h in doc.holds if h.session == hold.session]
        elements = old[0].elements if old else hold.elements
        holds.append(hold.model_copy(update={"elements": elements}))
    return ScopeDoc(scope=doc.scope, holds=holds) if holds else None
