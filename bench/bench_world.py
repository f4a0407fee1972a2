"""What the sandbox's production world costs to start (#33 item 4: "starting them must not slow
the current demo noticeably").

1. ``Sandbox`` start → stop, with the world (its MCP host forked, database built, mcp.json
   written) vs without, alternated, median of each; and how long the world's HTTP host takes
   to be ready in the background (the SDK's import, in the child).
2. One whole ``harness demo`` (anthropic runtime, in-process) with the world vs without it,
   after a warm-up run, alternated, median of three each: the ratio of the CPU time the demo
   and its children spent (goal ≤ 1.05), and of the wall time (noisy on a shared machine).

Run: ``.venv/bin/python bench/bench_world.py`` (``--quick`` skips part 2).
"""

from __future__ import annotations

import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.sandbox.demo import run_demo  # noqa: E402
from harness_cli.sandbox.runner import Sandbox  # noqa: E402

ROUNDS = 3


def sandbox_round(world: bool) -> tuple[float, float]:
    """(start→stop seconds, seconds until the world answered; 0 without it)."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        box = Sandbox(Path(tmp) / "sb", with_world=world).start()
        up = time.perf_counter() - started
        ready = 0.0
        if box.world is not None:
            box.world.wait_ready()
            ready = time.perf_counter() - started
        stop_at = time.perf_counter()
        box.stop()
        return up + (time.perf_counter() - stop_at), ready


def cpu_seconds() -> float:
    """This process and its waited-for children (the world's host once stopped, CI jobs…)."""
    own, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def demo_round(world: bool) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole demo."""
    before = cpu_seconds()
    report = run_demo(runtime="anthropic", world=world)
    assert report.ok, [s for s in report.steps if s.status == "failed"]
    return report.wall_seconds, cpu_seconds() - before


def main() -> None:
    times: dict[bool, list[float]] = {True: [], False: []}
    ready: list[float] = []
    for _ in range(ROUNDS):
        for world in (False, True):
            took, up = sandbox_round(world)
            times[world].append(took)
            if world:
                ready.append(up)
    bare, full = statistics.median(times[False]), statistics.median(times[True])
    print(f"sandbox start+stop without the world: {bare * 1000:.0f} ms (median of {ROUNDS})")
    added = (full - bare) * 1000
    print(f"sandbox start+stop with the world:    {full * 1000:.0f} ms (+{added:.0f} ms)")
    print(f"world ready in the background after:  {statistics.median(ready):.2f} s")
    if "--quick" in sys.argv:
        return
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    demo_round(False)  # warm-up: the first demo of a process pays every import
    for world in (True, False, False, True, True, False):
        runs[world].append(demo_round(world))
    for world in (False, True):
        walls = ", ".join(f"{wall:.1f}" for wall, _ in runs[world])
        cpus = ", ".join(f"{cpu:.1f}" for _, cpu in runs[world])
        print(f"demo {'with' if world else 'without'} the world: wall {walls} s; CPU {cpus} s")
    wall = {w: statistics.median(r[0] for r in runs[w]) for w in runs}
    cpu = {w: statistics.median(r[1] for r in runs[w]) for w in runs}
    # On a shared 2-core machine the wall time swings by a third run to run; the CPU time the
    # demo and its children spent does not depend on the neighbours.
    print(f"CPU ratio with/without: {cpu[True] / cpu[False]:.3f} (goal <= 1.05)")
    print(f"wall ratio with/without: {wall[True] / wall[False]:.3f} (median of 3 each; noisy)")


if __name__ == "__main__":
    main()
