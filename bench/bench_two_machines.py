"""[obligations #20] two machines × N interleaved case transitions on one workspace remote.

Each step, one of two clones (neither pulls before it acts: a stale clone, as a second VM or a
laptop has) makes a legal transition on one of a few cases, writes case.json as the harness
does and syncs (commit + push; a rejected push integrates the remote by the transition rules of
workspace/case_merge.py). At the end it counts, against the remote's case.json files:

- lost: a transition some machine made that is in no case's history (goal 0);
- terminal overturned: a case whose remote status is not terminal although a machine's close
  came after every move to a non-terminal state that knew of it (goal 0);
- refused: local moves a terminal state overrode (each made its run exit with a line);
- the workspace sync's cost per transition (median and p95), against a one-machine baseline
  of the same transitions in the same run.

``python bench/bench_two_machines.py [TRANSITIONS] [CASES] [SEED]`` (defaults 200, 8, 20).
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.workspace import gitsync  # noqa: E402
from harness_cli.workspace.case import TRANSITIONS  # noqa: E402

TERMINAL = ("closed",)


def clone(root: Path, remote: Path) -> tuple[Path, Path]:
    ws, locks = root / "workspace", root / "locks"
    gitsync.ensure_repo(ws, str(remote), lock_dir=locks)
    return ws, locks


def move(ws: Path, case_id: str, by: str, rng: random.Random, n: int) -> dict[str, Any] | None:
    path = ws / "case-workspaces" / case_id / "case.json"
    if path.exists():
        case = json.loads(path.read_text())
    else:
        case = {"id": case_id, "status": "new", "history": [], "updated_at": ""}
    to = rng.choice(sorted(TRANSITIONS[case["status"]]))
    at = f"2026-12-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.{n:06d}Z"
    step = {"at": at, "from": case["status"], "to": to, "by": by}
    case["history"].append(step)
    case["status"], case["updated_at"] = to, at
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(case, indent=2) + "\n")
    return step


def campaign(root: Path, transitions: int, cases: int, seed: int, machines: int) -> dict[str, Any]:
    rng = random.Random(seed)
    remote = root / "remote.git"
    subprocess.run(
        ["git", "init", "-q", "--bare", "--initial-branch=main", str(remote)], check=True
    )
    clones = [clone(root / f"m{i}", remote) for i in range(machines)]
    made: list[dict[str, Any]] = []
    costs: list[float] = []
    refused = 0
    for n in range(1, transitions + 1):
        i = rng.randrange(machines)
        ws, locks = clones[i]
        case_id = f"CASE-{rng.randrange(cases)}"
        step = move(ws, case_id, f"m{i}", rng, n)
        if step is None:
            continue
        made.append({**step, "case": case_id})
        started = time.perf_counter()
        result = gitsync.sync(ws, f"{case_id}: {step['to']}", lock_dir=locks, max_push_attempts=5)
        costs.append(time.perf_counter() - started)
        refused += len(getattr(result, "refused", []))  # (absent before the merge rules)
    remote_cases: dict[str, dict[str, Any]] = {}
    for c in range(cases):
        rel = f"main:case-workspaces/CASE-{c}/case.json"
        proc = subprocess.run(
            ["git", "-C", str(remote), "show", rel], capture_output=True, text=True, check=False
        )
        if proc.returncode == 0:
            remote_cases[f"CASE-{c}"] = json.loads(proc.stdout)
    keys = {
        (cid, h["at"], h["from"], h["to"], h["by"])
        for cid, case in remote_cases.items()
        for h in case.get("history", [])
    }
    lost = sum((m["case"], m["at"], m["from"], m["to"], m["by"]) not in keys for m in made)
    overturned = 0
    for case in remote_cases.values():
        live = [h for h in case.get("history", []) if not h.get("refused")]
        if live and live[-1]["to"] in TERMINAL and case["status"] not in TERMINAL:
            overturned += 1
    costs.sort()
    return {
        "transitions": len(made),
        "lost": lost,
        "overturned": overturned,
        "refused": refused,
        "median_ms": statistics.median(costs) * 1000,
        "p95_ms": costs[int(0.95 * (len(costs) - 1))] * 1000,
    }


def main() -> int:
    transitions = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    with tempfile.TemporaryDirectory() as tmp:
        two = campaign(Path(tmp) / "two", transitions, cases, seed, machines=2)
        one = campaign(Path(tmp) / "one", transitions, cases, seed, machines=1)
    print(f"2 machines x {two['transitions']} interleaved transitions on {cases} cases")
    print(f"  lost transitions:     {two['lost']} (goal 0)")
    print(f"  terminal overturned:  {two['overturned']} (goal 0)")
    print(f"  refused local moves:  {two['refused']} (each run told)")
    print(
        f"  sync per transition:  median {two['median_ms']:.0f} ms, p95 {two['p95_ms']:.0f} ms "
        f"(1 machine: median {one['median_ms']:.0f} ms; ratio "
        f"{two['median_ms'] / max(one['median_ms'], 1e-9):.2f})"
    )
    return 0 if two["lost"] == 0 and two["overturned"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
