"""Wall time of `harness demo` on this machine and the share spent inside the emulators
([sandbox] goal: the whole demo under 60 s). Runs the demo as an operator does, in a fresh
process each time, and reads the figures the demo reports."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    walls, inside, emulators = [], [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "harness_cli", "demo", "--json"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        walls.append(time.perf_counter() - start)
        data = json.loads(proc.stdout)["data"]
        inside.append(data["wall_seconds"])
        emulators.append(data["emulator_seconds"])
    wall, run, emu = (statistics.median(x) for x in (walls, inside, emulators))
    print(f"harness demo, median of {RUNS} runs")
    print(f"  process wall (incl. start-up)   {wall:6.2f} s   (goal < 60 s)")
    print(f"  demo run                        {run:6.2f} s")
    print(f"  inside the emulators (+CI jobs) {emu:6.2f} s   ({emu / run:6.1%} of the run)")
    print(f"  harness and the rest            {run - emu:6.2f} s   ({(run - emu) / run:6.1%})")
    print("  steps: " + ", ".join(f"{s['name']}={s['status']}" for s in data["steps"]))


if __name__ == "__main__":
    main()
