"""[intake] figures, measured against the sandbox's Slack emulator with real `harness poll-slack`
processes (HARNESS_DISPATCH=record):

1. Slack calls per cycle with 200 tracked threads (10 live, 95 closed, 95 whose parent was
   deleted): goal = channels + live threads; dead threads cost 0 once evicted.
2. A no-op cycle over 5 channels: process wall time, goal <= 0.6 s.
3. A burst of 1,000 messages across 20 channels: time until all are dispatched, duplicates.
4. [intake-durability] A no-op cycle with 1,000 tracked threads (100 live) and a full dedup
   file (20,000 entries): calls (goal <= live threads + channels + 2) and wall (goal <= 1 s).
5. [intake-durability] 1,000 live threads under a 100-call thread budget: cycles until every
   thread was polled at least once (goal <= 10).

``python bench/bench_intake.py [FIGURE ...]`` runs only the figures named (e.g. ``4 5``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.sandbox.httpbase import Request  # noqa: E402
from harness_cli.sandbox.slack_api import SlackEmulator  # noqa: E402


def no_intake_rate(cfg: Path) -> None:
    """Flood control off (#28 R13) where the config has it (a baseline checkout may not)."""
    path = cfg / "harness.yaml"
    text = path.read_text()
    path.write_text(re.sub(r"(?m)^(  per_(?:user|channel)):\s*\d+", r"\1: null", text))


def setup(root: Path, channels: list[str], emu: SlackEmulator, code: Path = REPO) -> dict[str, str]:
    """A HARNESS_HOME on the emulator; ``code`` another checkout (e.g. main, for a baseline in
    the same run) whose harness_cli and agent-config are used instead of this one's."""
    cfg = root / "agent-config"
    shutil.copytree(code / "agent-config", cfg)
    text = (cfg / "projects.yaml").read_text()
    chans = ", ".join(f'"{c}"' for c in channels)
    (cfg / "projects.yaml").write_text(
        text.replace('slack_channels: ["C0SUPPORT"]', f"slack_channels: [{chans}]")
    )
    for c in channels:
        if c != "C0SUPPORT":
            emu.add_channel(c, c.lower())
    no_intake_rate(cfg)  # one customer's tickets by the hundred: not what this measures
    env = {
        **os.environ,
        "HARNESS_HOME": str(root / "home"),
        "HARNESS_WORKSPACE": str(root / "ws"),
        "HARNESS_CONFIG": str(cfg),
        "HARNESS_DISPATCH": "record",
        "SLACK_API_URL": emu.url + "/api/",
        "SLACK_USER_TOKEN": "xoxp-0000000000-bench",
    }
    if code != REPO:
        env["PYTHONPATH"] = str(code)
    harness(env, "init")
    return env


def setting(env: dict[str, str], old: str, new: str) -> None:
    path = Path(env["HARNESS_CONFIG"]) / "harness.yaml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def tracked_threads(env: dict[str, str], emu: SlackEmulator, total: int, live: int) -> None:
    """``total`` ticket threads posted days ago and already tracked (``live`` of them open),
    plus a dedup file filled to its 20,000-entry bound, as after months of use."""
    from harness_cli.state.models import ThreadEntry, ThreadMap

    emu.workspace.clock = lambda: time.time() - 3 * 86400
    parents = [emu.post_as("C0SUPPORT", "U0CUSTOMER", f"old {i}")["ts"] for i in range(total)]
    emu.workspace.clock = time.time
    home = Path(env["HARNESS_HOME"])
    tmap = ThreadMap()
    for i, ts in enumerate(parents):
        tmap.threads[ThreadMap.key("C0SUPPORT", ts)] = ThreadEntry(
            channel="C0SUPPORT",
            thread_ts=ts,
            case_id=f"OLD-{i}",
            case_dir=str(Path(env["HARNESS_WORKSPACE"]) / "case-workspaces" / f"OLD-{i}"),
            project="team-a",
            closed=i >= live,
        )
    (home / "oncall_thread_map.json").write_text(tmap.model_dump_json(indent=2))
    # Written in the version-1 shape (key → expiry), which main reads as it is and this
    # harness migrates: the same file for the figure and for its baseline.
    base, expiry = time.time() - 2 * 86400, time.time() + 86400
    seen = {f"C0SUPPORT/{base + i / 1000:.6f}": expiry for i in range(20_000)}
    (home / "socket-dedup").write_text(json.dumps({"schema_version": 1, "seen": seen}))


def noop_tracked() -> None:
    print(
        "4. no-op cycle, 1,000 tracked threads (100 live) + a dedup file of 20,000 entries; "
        "goal <= 100 + 2 + 2 calls, <= 1 s:"
    )
    runs = [("this branch, no thread budget", REPO, "poll_thread_budget: 0")]
    runs.append(("this branch, default budget (50)", REPO, ""))
    main = Path(os.environ.get("HARNESS_BASELINE", "/work/main"))  # a checkout of the base
    if (main / "harness_cli").is_dir() and main.resolve() != REPO.resolve():
        runs.append((f"baseline {main}", main, ""))
    for label, code, budget in runs:
        calls, wall, cpu, empty = _noop(code, budget)
        print(
            f"   {label}: {calls} Slack calls, median wall {wall:.3f} s, CPU {cpu:.3f} s "
            f"(with an empty dedup file: wall {empty:.3f} s)"
        )


def _noop(code: Path, budget: str) -> tuple[int, float, float, float]:
    with tempfile.TemporaryDirectory() as tmp, SlackEmulator() as emu:
        env = setup(Path(tmp), ["C0SUPPORT"], emu, code)
        if budget:
            setting(env, "poll_thread_budget: 50", budget)
        harness(env, "poll-slack")
        tracked_threads(env, emu, 1000, 100)
        harness(env, "poll-slack")
        walls, calls, cpu = [], [], []
        for _ in range(5):
            before = sum(emu.calls_by_method().values())
            used = _children_cpu()
            start = time.perf_counter()
            harness(env, "poll-slack")
            walls.append(time.perf_counter() - start)
            cpu.append(_children_cpu() - used)
            calls.append(sum(emu.calls_by_method().values()) - before)
        dedup = Path(env["HARNESS_HOME"]) / "socket-dedup"
        full = dedup.read_text()
        dedup.write_text('{"schema_version": 1, "seen": {}}')
        empty = []
        for _ in range(3):
            start = time.perf_counter()
            harness(env, "poll-slack")
            empty.append(time.perf_counter() - start)
        dedup.write_text(full)
        return (
            int(statistics.median(calls)),
            statistics.median(walls),
            statistics.median(cpu),
            statistics.median(empty),
        )


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fairness() -> None:
    with tempfile.TemporaryDirectory() as tmp, SlackEmulator() as emu:
        env = setup(Path(tmp), ["C0SUPPORT"], emu)
        setting(env, "poll_thread_budget: 50", "poll_thread_budget: 100")
        harness(env, "poll-slack")
        tracked_threads(env, emu, 1000, 1000)
        polled: set[str] = set()
        seen = 0
        cycles = 0
        while len(polled) < 1000 and cycles < 30:
            cycles += 1
            harness(env, "poll-slack")
            records = emu.recorded("conversations.replies")
            for rec in records[seen:]:
                req = Request(rec.method, rec.path, rec.query, rec.headers, rec.body)
                polled.add(str(req.arg("ts")))
            seen = len(records)
        print(
            f"5. 1,000 live threads, thread budget 100 calls a cycle: every thread polled at "
            f"least once after {cycles} cycles ({len(polled)} threads); goal <= 10"
        )


def harness(env: dict[str, str], *args: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-m", "harness_cli", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(env["HARNESS_HOME"]).parent,  # not this checkout: `-m` imports the cwd first
    )
    if proc.returncode != 0:
        raise SystemExit(f"harness {' '.join(args)} failed: {proc.stderr}")
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def calls_per_cycle() -> None:
    with tempfile.TemporaryDirectory() as tmp, SlackEmulator() as emu:
        env = setup(Path(tmp), ["C0SUPPORT"], emu)
        setting(env, "poll_thread_budget: 50", "poll_thread_budget: 0")  # dead ones, not rotation
        tickets = [emu.post_as("C0SUPPORT", "U0CUSTOMER", f"ticket {i}") for i in range(200)]
        harness(env, "poll-slack")  # opens 200 cases and their threads
        for msg in tickets[:95]:
            emu.delete_message("C0SUPPORT", msg["ts"])
        from harness_cli.state.models import ThreadMap

        path = Path(tmp) / "home" / "oncall_thread_map.json"
        tmap = ThreadMap.model_validate_json(path.read_text())
        closed_ts = {m["ts"] for m in tickets[95:190]}
        for entry in tmap.threads.values():
            if entry.thread_ts in closed_ts or entry.channel == "D0SELF":
                entry.closed = True
        path.write_text(tmap.model_dump_json())
        figures = []
        for _ in range(5):
            before = emu.calls_by_method()
            harness(env, "poll-slack")
            after = emu.calls_by_method()
            figures.append(
                {
                    k: after.get(k, 0) - before.get(k, 0)
                    for k in after
                    if after.get(k, 0) - before.get(k, 0)
                }
            )
        print("1. Slack calls per cycle, 200 tracked threads (10 live, 95 closed, 95 deleted):")
        for i, f in enumerate(figures, 1):
            print(f"   cycle {i}: {sum(f.values())} calls {f}")
        print(
            "   goal once the dead ones are confirmed gone (thread_gone_confirmations = 3 cycles"
            " for threads this young; at once for old ones): 2 history + 10 replies = 12"
        )


def noop_cycle() -> None:
    channels = [f"C0SUPPORT{i}" if i else "C0SUPPORT" for i in range(5)]
    with tempfile.TemporaryDirectory() as tmp, SlackEmulator() as emu:
        env = setup(Path(tmp), channels, emu)
        harness(env, "poll-slack")
        walls = []
        for _ in range(10):
            start = time.perf_counter()
            harness(env, "poll-slack")
            walls.append(time.perf_counter() - start)
        py = []
        for _ in range(10):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            py.append(time.perf_counter() - start)
        print(
            f"2. no-op cycle, 5 channels + self-DM: median {statistics.median(walls):.3f} s "
            f"(python -c pass {statistics.median(py):.3f} s); goal <= 0.6 s"
        )


def burst() -> None:
    channels = [f"C0SUPPORT{i}" if i else "C0SUPPORT" for i in range(20)]
    with tempfile.TemporaryDirectory() as tmp, SlackEmulator() as emu:
        env = setup(Path(tmp), channels, emu)
        harness(env, "poll-slack")
        for i in range(1000):
            emu.post_as(channels[i % 20], "U0CUSTOMER", f"burst {i}")
        start = time.perf_counter()
        cycles = 0
        while True:
            cycles += 1
            data = harness(env, "poll-slack")["data"]
            if not data["new_cases"]:  # type: ignore[index]
                break
        took = time.perf_counter() - start
        sent = [json.loads(p.read_text()) for p in (Path(tmp) / "home" / "payloads").glob("*.json")]
        ids = [p["case_id"] for p in sent if p["workflow"] == "investigate"]
        print(
            f"3. burst of 1,000 messages over 20 channels: {len(ids)} dispatched in "
            f"{took:.1f} s ({cycles} cycles), duplicates {len(ids) - len(set(ids))}"
        )


FIGURES = {"1": calls_per_cycle, "2": noop_cycle, "3": burst, "4": noop_tracked, "5": fairness}

if __name__ == "__main__":
    for figure in sys.argv[1:] or list(FIGURES):
        FIGURES[figure]()
