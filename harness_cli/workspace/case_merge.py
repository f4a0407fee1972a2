"""Case state that merges across machines (issue #20, "Case state that merges").

Two machines change one case while neither has the other's commit: the workspace sync meets
the conflict when it integrates the remote (:func:`harness_cli.workspace.gitsync._integrate`).
A text merge ("keep ours" hunks) let a stale machine's ``awaiting_approval`` overwrite the
other's ``closed``. Here every JSON file both sides changed is merged by meaning instead:

- ``case.json`` by the transition rules: **a terminal state wins** (``closed`` over
  ``merged`` over everything else), so a close is never undone by a stale investigation; **two
  non-terminal changes keep both in the history and take the later**; the history is the union
  of both sides' transitions (who/when), the losing side's marked ``refused``;
- every other JSON object (the maps a second machine shares) key by key: a key only one side
  changed takes that side, one both changed the same way is kept, one both changed differently
  keeps the local side (as before), nested objects merged the same way.

A local transition the merge refused is reported (:class:`Merged.refused`) so the run that made
it exits with a clear line instead of carrying on as if its move had happened.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TERMINAL_RANK = {"closed": 2, "merged": 1}
"""Terminal states, strongest first: the rule "a terminal state wins" (a merged case may still
be closed, never the reverse)."""


@dataclass
class Merged:
    text: str
    refused: list[str] = field(default_factory=list)


def _load(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def merge_json(path: str, base: str | None, ours: str, theirs: str) -> Merged | None:
    """The meaning-merge of one JSON file, or None when it is not one we can merge (then the
    caller keeps the local side, as git's "ours" did)."""
    b, o, t = _load(base), _load(ours), _load(theirs)
    if not isinstance(o, dict) or not isinstance(t, dict):
        return None
    b = b if isinstance(b, dict) else {}
    if path.endswith("/case.json") and "status" in o and "status" in t:
        return merge_case(b, o, t)
    return Merged(_dump(merge_map(b, o, t)))


def merge_map(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Three-way merge of two JSON objects, key by key (local side on a true conflict)."""
    merged: dict[str, Any] = {}
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        b, o, t = base.get(key, _GONE), ours.get(key, _GONE), theirs.get(key, _GONE)
        if o == t or t == b:
            value = o
        elif o == b:
            value = t
        elif isinstance(o, dict) and isinstance(t, dict):
            value = merge_map(b if isinstance(b, dict) else {}, o, t)
        elif isinstance(o, list) and isinstance(t, list):
            value = _union(o, t)
        else:
            value = o
        if value is not _GONE:
            merged[key] = value
    return merged


_GONE: Any = object()


def merge_case(base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> Merged:
    """Merge two versions of one case by the transition rules (module docstring)."""
    status_o, status_t = ours["status"], theirs["status"]
    new_o = _new_moves(base, ours)
    new_t = _new_moves(base, theirs)
    winner, by_rank = _pick(base, ours, theirs)
    # Only a terminal state refuses the other side's move; two non-terminal ones both stand in
    # the history, the later one giving the status.
    loser_moves = (new_t if winner is ours else new_o) if by_rank else []
    fields = merge_map(base, ours, theirs)
    for key in ("status", "exit"):  # the state's own fields come from the winning side
        if key in winner:
            fields[key] = winner[key]
    known = {_move_key(m) for m in ours.get("history", []) if isinstance(m, dict)}
    history = [*ours.get("history", []),
               *(m for m in theirs.get("history", []) if _move_key(m) not in known)]  # fmt: skip
    refused_keys = {_move_key(m) for m in loser_moves if m.get("to") != winner["status"]}
    for move in history:
        if _move_key(move) in refused_keys:
            move["refused"] = f"merged with a concurrent move to {winner['status']}"
    if history:
        fields["history"] = sorted(history, key=lambda m: str(m.get("at", "")))
    if "updated_at" in ours or "updated_at" in theirs:
        fields["updated_at"] = max(
            str(ours.get("updated_at", "")), str(theirs.get("updated_at", ""))
        )
    refused = []
    if by_rank and winner is theirs and new_o:
        last = new_t[-1] if new_t else {}
        refused.append(
            f"case {ours.get('id', '?')}: this machine's move to {status_o} was refused — "
            f"another machine moved it to {status_t}"
            + (f" ({last.get('by') or '?'}, {last.get('at')})" if last else "")
        )
    return Merged(_dump(fields), refused)


def _pick(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """The side whose state stands: the only side that moved; else the stronger terminal
    state (then True: the other side's move is refused); else the later move (ties: the local
    side)."""
    status_o, status_t = ours["status"], theirs["status"]
    new_o, new_t = _new_moves(base, ours), _new_moves(base, theirs)
    if status_o == status_t or not new_t:
        return ours, False
    if not new_o:
        return theirs, False
    rank_o, rank_t = TERMINAL_RANK.get(status_o, 0), TERMINAL_RANK.get(status_t, 0)
    if rank_o != rank_t:
        return (ours if rank_o > rank_t else theirs), True
    last_o = max(str(m.get("at", "")) for m in new_o)
    last_t = max(str(m.get("at", "")) for m in new_t)
    return (theirs if last_t > last_o else ours), False


def _new_moves(base: dict[str, Any], side: dict[str, Any]) -> list[dict[str, Any]]:
    known = {_move_key(m) for m in base.get("history", []) if isinstance(m, dict)}
    return [m for m in side.get("history", []) if isinstance(m, dict) and _move_key(m) not in known]


def _move_key(move: dict[str, Any]) -> str:
    return json.dumps([move.get(k) for k in ("at", "from", "to", "by")], default=str)


def _union(ours: list[Any], theirs: list[Any]) -> list[Any]:
    seen = {json.dumps(x, sort_keys=True, default=str) for x in ours}
    extra = [x for x in theirs if json.dumps(x, sort_keys=True, default=str) not in seen]
    return [*ours, *extra]


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)
