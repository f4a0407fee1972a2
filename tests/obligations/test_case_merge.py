"""The transition rules the workspace sync merges case.json by (workspace/case_merge.py), over
many seeds: whatever two machines did to one case since their common state, a terminal state
survives, no move is lost from the history, and the later of two non-terminal moves stands."""

from __future__ import annotations

import json
import random
from typing import Any

from harness_cli.workspace.case import TRANSITIONS
from harness_cli.workspace.case_merge import TERMINAL_RANK, merge_case, merge_map


def _walk(rng: random.Random, case: dict[str, Any], by: str, clock: list[int]) -> dict[str, Any]:
    case = json.loads(json.dumps(case))
    for _ in range(rng.randint(1, 3)):
        options = sorted(TRANSITIONS[case["status"]])
        to = rng.choice(options)
        clock[0] += rng.randint(1, 5)
        at = f"2026-12-01T10:{clock[0]:02d}:00Z"
        case["history"].append({"at": at, "from": case["status"], "to": to, "by": by})
        case["status"], case["updated_at"] = to, at
    return case


def test_two_machines_moves_merge_by_the_transition_rules_over_many_seeds() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        base = {"id": "AAA-1", "status": "new", "history": [], "updated_at": ""}
        clock = [0]
        base = _walk(rng, base, "start", clock)
        a_clock, b_clock = [clock[0]], [clock[0] + rng.randint(-2, 2)]
        ours, theirs = _walk(rng, base, "a", a_clock), _walk(rng, base, "b", b_clock)
        merged = merge_case(base, ours, theirs)
        out = json.loads(merged.text)
        keys = {json.dumps([h["at"], h["from"], h["to"], h["by"]]) for h in out["history"]}
        for side in (ours, theirs):  # no move lost
            for h in side["history"]:
                assert json.dumps([h["at"], h["from"], h["to"], h["by"]]) in keys, seed
        best = max(TERMINAL_RANK.get(ours["status"], 0), TERMINAL_RANK.get(theirs["status"], 0))
        assert TERMINAL_RANK.get(out["status"], 0) == best, (seed, ours["status"], theirs["status"])
        if best == 0 and ours["status"] != theirs["status"]:
            later = ours if ours["history"][-1]["at"] >= theirs["history"][-1]["at"] else theirs
            assert out["status"] == later["status"], seed
        if merged.refused:  # only a local move a stronger terminal state overrode
            assert TERMINAL_RANK.get(theirs["status"], 0) > TERMINAL_RANK.get(ours["status"], 0)
        ats = [h["at"] for h in out["history"]]
        assert ats == sorted(ats)


def test_a_shared_map_keeps_every_key_either_side_added() -> None:
    base = {"a": 1, "nested": {"x": 1}}
    ours = {"a": 1, "b": 2, "nested": {"x": 1, "y": 2}}
    theirs = {"a": 3, "c": 4, "nested": {"x": 1, "z": 3}}
    assert merge_map(base, ours, theirs) == {
        "a": 3, "b": 2, "c": 4, "nested": {"x": 1, "y": 2, "z": 3},
    }  # fmt: skip
