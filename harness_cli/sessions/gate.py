"""The preflight gate: allow / warn / deny, a pure function of (request, live sessions,
policy). Nothing here reads a file or the network.

Reference 004: "Si un autre agent détient une réservation sur les mêmes éléments, l'exécution
est refusée… le motif dit qui travaille là, et sur quoi"::

    session denied by preflight gate: "Billing API" is being worked on by
    claude-code/vincent (add proration to plan changes)

and "Si le gate ne fait qu'avertir… l'exécution ne démarre pas et n'échoue pas non plus. Elle
attend au statut En attente d'approbation". Approving re-evaluates: a warn becomes allow, a
deny stays a deny.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from harness_cli.sessions.model import Element, Hold
from harness_cli.sessions.policy import WorkflowPolicy

Decision = Literal["allow", "warn", "deny"]
DENY_PREFIX = "session denied by preflight gate: "
WARN_LINE = (
    "{n} target element(s) are being worked on by other active sessions — coordinate before "
    "changing them"
)


@dataclass
class Verdict:
    decision: Decision
    reasons: list[str] = field(default_factory=list)
    holders: list[Hold] = field(default_factory=list)
    """The other sessions that made it warn or deny."""

    @property
    def line(self) -> str:
        return self.reasons[0] if self.reasons else "allowed"


def deny_line(element: Element, holder: Hold) -> str:
    task = f" ({holder.task})" if holder.task else ""
    return f'{DENY_PREFIX}"{element.label}" is being worked on by {holder.name}{task}'


def conflicts(elements: Iterable[Element], holder: Hold) -> list[Element]:
    """The holder's elements that overlap any of ``elements``."""
    wanted = list(elements)
    return [mine for mine in holder.elements if any(mine.overlaps(w) for w in wanted)]


def exclusive_in(hold: Hold, element: Element) -> bool:
    return hold.exclusive and not element.shared


def preflight_gate(
    request: Hold, live: Iterable[Hold], policy: WorkflowPolicy, *, approved: bool = False
) -> Verdict:
    """Deny when an overlapping element is held exclusively by another live session, or when
    this one asks for an element exclusively and anyone else is on it; warn when shared
    elements overlap and the policy says ``on_overlap: warn`` (unless the operator approved
    this run: then allow)."""
    denied: list[tuple[Element, Hold]] = []
    shared: list[tuple[Element, Hold]] = []
    for holder in live:
        if holder.session == request.session:
            continue
        for theirs in holder.elements:
            for mine in request.elements:
                if not theirs.overlaps(mine):
                    continue
                hard = exclusive_in(holder, theirs) or exclusive_in(request, mine)
                (denied if hard else shared).append((theirs, holder))
    denied, shared = _once(denied), _once(shared)
    if denied:
        return Verdict("deny", [deny_line(e, h) for e, h in denied], _unique(h for _, h in denied))
    if shared and policy.on_overlap == "warn" and not approved:
        holders = _unique(h for _, h in shared)
        detail = "; ".join(f'"{e.label}" by {h.name}' for e, h in shared)
        return Verdict("warn", [WARN_LINE.format(n=len(shared)) + f" ({detail})"], holders)
    return Verdict("allow", [], _unique(h for _, h in shared))


def _once(pairs: list[tuple[Element, Hold]]) -> list[tuple[Element, Hold]]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for e, h in pairs:
        key = (h.session, e.scope, e.path)
        if key not in seen:
            seen.add(key)
            out.append((e, h))
    return out


def _unique(holders: Iterable[Hold]) -> list[Hold]:
    seen: dict[str, Hold] = {}
    for h in holders:
        seen.setdefault(h.session, h)
    return list(seen.values())
