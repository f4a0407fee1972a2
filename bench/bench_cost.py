"""The cost meter's price: what metering adds to one model call (goal < 1 ms), and what
`harness cost` takes over 100,000 logged calls (goal < 1 s).

Per call: the same runtime run N times bare and N times through ``MeteredRuntime`` (the
budget check before, the pricing and the O_APPEND line after), in a real HARNESS_HOME with
a case on disk; the difference per call is the meter's. The runtime is a stand-in that
returns at once — a model call takes seconds, so any real one would hide the overhead.

`harness cost`: 100,000 lines in the meter's own format over 30 day files, 40 cases, 3
projects. Written whole with no index (a log from before the index), timed in-process and
cold (``meter.totals``); appended line by line by the meter itself (as the harness writes
them: the first call of a day sums the day before), timed as the whole command — its first,
cold run, then with farm-bench against `harness --version` (the CLI's own start-up).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

N_CALLS = int(os.environ.get("BENCH_CALLS", "3000"))
N_LOGGED = int(os.environ.get("BENCH_LOGGED", "100000"))


class Instant:
    """A runtime that answers at once with a realistic usage (not a model: the yardstick)."""

    name = "anthropic"
    model = "claude-sonnet-4-6"

    def run(self, req: object) -> object:
        from harness_cli.services.runtime import RunResult, Usage

        return RunResult("ok", "end_turn", usage=Usage(5200, 640, 1800, 21000), turns=3)


def per_call(root: Path) -> tuple[float, float]:
    from harness_cli.agents.metered import MeteredRuntime
    from harness_cli.cost import meter
    from harness_cli.cost.prices import Budgets, CostSettings
    from harness_cli.services.runtime import RunRequest
    from harness_cli.workspace.case import Case

    os.environ["HARNESS_HOME"] = str(root / "home")
    os.environ["HARNESS_WORKSPACE"] = str(root / "workspace")
    folder = root / "workspace" / "case-workspaces" / "AAA-1"
    folder.mkdir(parents=True)
    now = datetime.now(UTC)
    case = Case(id="AAA-1", project="team-a", created_at=now, updated_at=now)
    record = root / "workspace" / "control" / "AAA-1"  # the harness's record of the case
    record.mkdir(parents=True)
    (record / "case.json").write_text(case.model_dump_json(by_alias=True))
    req = RunRequest(role="investigator", prompt="x", workdir=root, allowed_root=root)
    bare = Instant()
    # limits far away, so every check runs in full (run, case and day) and none stops the loop
    far = Budgets(case_usd=1e12, workflow_usd=1e12, day_usd=1e12)
    metered = MeteredRuntime(bare, CostSettings(budgets=far), bare.model)  # type: ignore[arg-type]
    with meter.scope(case="AAA-1", project="team-a", workflow="investigate", run="bench"):
        for _ in range(50):  # warm both paths
            bare.run(req)
            metered.run(req)
        began = time.perf_counter()
        for _ in range(N_CALLS):
            bare.run(req)
        base = (time.perf_counter() - began) / N_CALLS
        began = time.perf_counter()
        for _ in range(N_CALLS):
            metered.run(req)
        with_meter = (time.perf_counter() - began) / N_CALLS
    return base, with_meter


def write_log(home: Path, *, through_meter: bool = False) -> None:
    """100,000 calls over 30 days. ``through_meter``: each line appended by the meter's own
    write path (``meter.append``), as the harness writes them — the first call of each day sums
    the day before into ``.index/``; otherwise the day files are written whole, unindexed (a
    log from before the index, or copied in by hand)."""
    rng = random.Random(1)
    folder = home / "logs" / "cost"
    folder.mkdir(parents=True)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    per_day = N_LOGGED // 30
    for day in range(30):
        at = start + timedelta(days=day)
        lines = []
        for i in range(per_day if day < 29 else N_LOGGED - per_day * 29):
            case = rng.randrange(40)
            lines.append(json.dumps({
                "ts": (at + timedelta(seconds=i)).isoformat(timespec="seconds"),
                "case": f"AAA-{case}", "project": f"team-{case % 3}",
                "workflow": rng.choice(("investigate", "review", "dev-agent", "followup")),
                "run": f"r{case}-{day}", "iteration": rng.randrange(8),
                "role": rng.choice(("investigator", "red-team", "dev-agent")),
                "model": "claude-sonnet-4-6", "rt": "claude-code",
                "in": rng.randrange(9000), "out": rng.randrange(900), "cw": rng.randrange(3000),
                "cr": rng.randrange(30000), "usd": round(rng.random() / 20, 6), "rep": True,
                "s": 12.5, "turns": 3,
            }, separators=(",", ":")))  # fmt: skip
        if not through_meter:
            (folder / f"{at.date().isoformat()}.jsonl").write_text("\n".join(lines) + "\n")
            continue
        os.environ["HARNESS_HOME"] = str(home)
        from harness_cli.cost import meter

        for line in lines:
            meter.append(json.loads(line), at.date())


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-cost-"))
    try:
        base, metered = per_call(root)
        overhead_ms = (metered - base) * 1000
        print(f"cost meter, {N_CALLS} calls: bare {base * 1e6:.1f} µs/call, metered "
              f"{metered * 1e6:.1f} µs/call → overhead {overhead_ms:.3f} ms/call "
              f"(goal < 1 ms: {'met' if overhead_ms < 1 else 'MISSED'})")  # fmt: skip

        raw = root / "unindexed"
        write_log(raw)
        os.environ["HARNESS_HOME"] = str(raw)
        from harness_cli.cost.meter import totals

        began = time.perf_counter()
        report = totals()
        inproc = time.perf_counter() - began
        assert report.total.calls == N_LOGGED, report.total.calls
        print(
            f"meter.totals over {N_LOGGED:,} calls in day files with no index (a log from "
            f"before the index): {inproc:.3f} s in-process, cold "
            f"({len(report.groups['case'])} cases, {len(report.groups['day'])} days)"
        )
        home = root / "logged"
        began = time.perf_counter()
        write_log(home, through_meter=True)
        print(f"the same calls appended by the meter: {time.perf_counter() - began:.1f} s")
        harness = str(Path(sys.executable).with_name("harness"))
        env = {**os.environ, "HARNESS_HOME": str(home)}
        began = time.perf_counter()
        subprocess.run([harness, "cost", "--json"], env=env, capture_output=True, check=True)
        print(f"`harness cost --json` over the meter's log, its first (cold) run: "
              f"{time.perf_counter() - began:.3f} s wall (goal < 1 s)")  # fmt: skip
        out = subprocess.run(
            ["farm-bench", "-n", "5", "--vs", f"{harness} --version", "--", harness, "cost",
             "--json"], capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        if out.returncode == 0:
            print("`harness cost --json` (A) against `harness --version` (B), farm-bench:")
            print("\n".join("  " + ln for ln in out.stdout.strip().splitlines()))
        else:
            began = time.perf_counter()
            subprocess.run([harness, "cost", "--json"], env=env, capture_output=True, check=True)
            print(
                f"`harness cost --json`: {time.perf_counter() - began:.3f} s wall "
                f"(farm-bench unavailable: {out.stderr.strip()[:200]})"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
