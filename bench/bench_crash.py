"""[intake-durability] crash campaign: SIGKILL `harness poll-slack` hundreds of times — at every
named write step (HARNESS_CRASH_AT) and at random instants, with a slow Slack — while tickets
keep arriving; then one clean cycle. Counts what the invariant forbids:

- lost: a ticket Slack shows with no case, or no investigation dispatch;
- duplicated: a case with two dispatches or two case threads;
- uncommitted: a case whose case.json is not in the workspace's HEAD (or not pushed).

Goal 0/0/0. ``python bench/bench_crash.py [KILLS] [TICKETS] [SEEDS]``: KILLS landed SIGKILLs
and at least TICKETS tickets in all, spread over SEEDS campaigns with seeds 13, 14, … (defaults
220, 60, 4), each on a fresh home.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.faults import ENV, POINTS  # noqa: E402
from harness_cli.sandbox.httpbase import Fault  # noqa: E402
from harness_cli.sandbox.slack_api import SlackEmulator  # noqa: E402


def no_intake_rate(cfg: Path) -> None:
    """Flood control off (#28 R13) where the config has it (a baseline checkout may not)."""
    path = cfg / "harness.yaml"
    text = path.read_text()
    path.write_text(re.sub(r"(?m)^(  per_(?:user|channel)):\s*\d+", r"\1: null", text))


def setup(root: Path, emu: SlackEmulator) -> dict[str, str]:
    cfg = root / "agent-config"
    shutil.copytree(REPO / "agent-config", cfg)
    no_intake_rate(cfg)  # one customer's tickets by the hundred: not what this measures
    bare = root / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", str(bare)], check=True)
    gitconfig = root / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Bench\n\temail = bench@example.invalid\n")
    env = {
        **os.environ,
        "HARNESS_HOME": str(root / "home"),
        "HARNESS_WORKSPACE": str(root / "ws"),
        "HARNESS_CONFIG": str(cfg),
        "HARNESS_DISPATCH": "record",
        "SLACK_API_URL": emu.url + "/api/",
        "SLACK_USER_TOKEN": "xoxp-0000000000-bench",
        "GIT_CONFIG_GLOBAL": str(gitconfig),
    }
    env.pop(ENV, None)
    run(env, "init", "--remote", f"file://{bare}")
    run(env, "poll-slack")
    return env


def run(env: dict[str, str], *args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness_cli", *args], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"harness {' '.join(args)} failed: {proc.stderr}")


def spawn(env: dict[str, str], extra: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness_cli", "poll-slack"],
        env={**env, **extra},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def count(root: Path, emu: SlackEmulator, tickets: list[dict[str, Any]]) -> dict[str, int]:
    payloads = [json.loads(p.read_text()) for p in (root / "home" / "payloads").glob("*.json")]
    sent = [p["case_id"] for p in payloads if p["workflow"] == "investigate"]
    head = subprocess.run(
        ["git", "-C", str(root / "ws"), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    pushed = subprocess.run(
        ["git", "-C", str(root / "remote.git"), "ls-tree", "-r", "--name-only", "main"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    dm = [m for m in emu.messages("D0SELF") if not m.get("thread_ts")]
    lost = duplicated = uncommitted = 0
    for msg in tickets:
        case_id = f"slack-C0SUPPORT-{msg['ts'].replace('.', '-')}"
        folder = root / "ws" / "case-workspaces" / case_id
        threads = sum(1 for m in dm if f"case *{case_id}*" in m["text"])
        if not (folder / "case.json").exists() or sent.count(case_id) == 0:
            lost += 1
        if sent.count(case_id) > 1 or threads > 1:
            duplicated += 1
        rel = f"case-workspaces/{case_id}/case.json"
        if rel not in head or rel not in pushed:
            uncommitted += 1
    return {"lost": lost, "duplicated": duplicated, "uncommitted": uncommitted}


def campaign(kills: int, tickets_wanted: int, seed: int) -> dict[str, int]:
    """Until ``kills`` SIGKILLs have landed: in turn, a run armed at the next named write step
    (with one or two new tickets, so that it has work that reaches the step), and a run killed
    at a random instant (a new ticket half the time). At least ``tickets_wanted`` tickets."""
    rng = random.Random(seed)
    points = list(POINTS)
    with tempfile.TemporaryDirectory() as tmp, SlackEmulator() as emu:
        root = Path(tmp)
        env = setup(root, emu)
        emu.add_fault(Fault(kind="delay", seconds=0.01, times=-1))  # a slow Slack
        tickets: list[dict[str, Any]] = []

        def post(count: int) -> None:
            for _ in range(count):
                n = len(tickets)
                tickets.append(emu.post_as("C0SUPPORT", "U0CUSTOMER", f"ticket number {n}"))

        named = instants = reached = at_points = i = 0
        started = time.perf_counter()
        while reached < kills and i < 4 * kills:
            i += 1
            if i % 2 == 0:
                nth = rng.randint(1, 2)
                post(nth)
                proc = spawn(env, {ENV: f"{points[(i // 2) % len(points)]}:{nth}"})
                named += 1
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                at_points += proc.returncode == -signal.SIGKILL
            else:
                post(rng.random() < 0.5)
                proc = spawn(env, {})
                time.sleep(rng.uniform(0.3, 1.2))
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                instants += 1
            reached += proc.returncode == -signal.SIGKILL
        post(max(tickets_wanted - len(tickets), 0))
        took = time.perf_counter() - started
        emu.control("clear_faults", {})
        clean = time.perf_counter()
        run(env, "poll-slack")
        clean = time.perf_counter() - clean
        found = count(root, emu, tickets)
    print(
        f"   seed {seed}: {reached} SIGKILLs landed mid-run in {took:.0f} s ({at_points} at a "
        f"named write step out of {named} armed runs, {reached - at_points} at a random instant) "
        "over "
        f"{len(tickets)} tickets; after one clean cycle ({clean:.2f} s): lost {found['lost']}, "
        f"duplicated {found['duplicated']}, uncommitted {found['uncommitted']}"
    )
    return {"kills": reached, "tickets": len(tickets), **found}


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    kills, tickets, seeds = args + [220, 60, 4][len(args) :]
    print(f"crash campaign: poll-slack SIGKILLed, a slow Slack (10 ms a call), {seeds} seeds")
    total: dict[str, int] = {}
    for n in range(seeds):
        for key, value in campaign(-(-kills // seeds), -(-tickets // seeds), 13 + n).items():
            total[key] = total.get(key, 0) + value
    print(
        f"   total: {total['kills']} kills over {total['tickets']} tickets — lost "
        f"{total['lost']}, duplicated {total['duplicated']}, uncommitted {total['uncommitted']}"
        " (goal 0/0/0)"
    )
