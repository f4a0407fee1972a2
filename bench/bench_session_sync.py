"""Latency of the UserPromptSubmit session sync: what one prompt waits for, with a 1,000-line
transcript on each of two machines (real git, a bare repo in a temp dir as the remote).

Measured: the full three-step sync (fetch + reset, extract the other machine's delta, copy +
commit + push) when the other machine added 5 messages; the same with nothing to push; a
throttled keystroke; one background fetch; and the hook script as claude runs it (a new
process: interpreter start-up and imports included).

    .venv/bin/python bench/bench_session_sync.py        # BENCH_RUNS=15 by default
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from harness_cli.memory.resume.model import HookInput, SessionEnv, SessionSyncSettings
from harness_cli.memory.resume.start import fetch_once
from harness_cli.memory.resume.sync import sync_prompt

RUNS = int(os.environ.get("BENCH_RUNS", "15"))
SESSION = "0b5c1a8e-3f0e-4d7a-9c52-6f1f2b8d4e11"
CWD = "/srv/work/billing_api"
LINES = 1000
FAST = SessionSyncSettings(throttle_seconds=0)


def record(i: int, machine: str) -> bytes:
    text = f"{machine} message {i}: " + "the invoice total is rounded half-even " * 12
    role = "user" if i % 2 else "assistant"
    obj = {
        "parentUuid": None,
        "type": role,
        "uuid": str(uuid.uuid4()),
        "sessionId": SESSION,
        "cwd": CWD,
        "timestamp": "2026-11-29T10:00:00.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }
    return (json.dumps(obj) + "\n").encode()


class Machine:
    def __init__(self, root: Path, name: str, remote: Path) -> None:
        self.name = name
        self.env = SessionEnv(
            repo=root / "sessions-repo",
            remote=str(remote),
            machine=name,
            state_dir=root / "session-sync",
            lock_dir=root / "locks" / "session-sync",
            claude_home=root / ".claude",
        )
        self.transcript = self.env.transcript_path(SESSION, CWD)
        self.transcript.parent.mkdir(parents=True)
        self.count = 0
        self.hook = HookInput(SESSION, CWD, str(self.transcript), "UserPromptSubmit")

    def say(self, n: int) -> None:
        with self.transcript.open("ab") as handle:
            for _ in range(n):
                handle.write(record(self.count, self.name))
                self.count += 1

    def sync(self, settings: SessionSyncSettings = FAST) -> int:
        return sync_prompt(self.hook, self.env, settings).messages


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def row(name: str, samples: list[float]) -> None:
    q = statistics.quantiles(samples, n=10) if len(samples) >= 2 else samples * 9
    print(f"  {name:<52} median {statistics.median(samples):7.1f} ms   p90 {q[-1]:7.1f} ms")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@localhost\n")
        os.environ.update(GIT_CONFIG_GLOBAL=str(root / "gitconfig"), GIT_CONFIG_NOSYSTEM="1")
        os.environ["HARNESS_HOME"] = str(root / "harness-home")
        remote = root / "sessions.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        laptop, vm = Machine(root / "laptop", "laptop", remote), Machine(root / "vm", "vm", remote)
        laptop.say(LINES)
        start = time.perf_counter()
        laptop.sync()
        first = (time.perf_counter() - start) * 1000
        vm.say(LINES)
        vm.sync()
        assert laptop.sync() == LINES  # the vm's history, once
        size = laptop.transcript.stat().st_size / 1024

        print(f"session sync, {LINES}-line transcripts ({size:.0f} KiB each), {RUNS} runs:")
        print(f"  {'first sync (clone/init + push 1,000 lines)':<52} {first:7.1f} ms")

        samples = []
        for _ in range(RUNS):
            vm.say(5)
            vm.sync()
            laptop.say(1)
            start = time.perf_counter()
            got = laptop.sync()
            samples.append((time.perf_counter() - start) * 1000)
            assert got == 5, got
        row("full sync: take 5 new messages, push ours", samples)
        row("full sync: nothing new on either side", timed(laptop.sync, RUNS))
        throttle = SessionSyncSettings()
        laptop.sync(throttle)
        row(
            "throttled keystroke (< 30 s since the last sync)",
            timed(lambda: laptop.sync(throttle), RUNS),
        )
        row(
            "background fetch (fetch + reset, nothing new)",
            timed(lambda: fetch_once(laptop.env, FAST, wait=5), RUNS),
        )
        row("hook script, new process: take 5, push ours", hook_runs(root, laptop, vm))


def hook_runs(root: Path, laptop: Machine, vm: Machine) -> list[float]:
    script = Path(__file__).resolve().parents[1] / "cron" / "hooks" / "user-prompt-submit.sh"
    env = {
        **os.environ,
        "HARNESS_HOME": str(root / "laptop"),
        "HARNESS_SESSIONS_REPO": str(laptop.env.repo),
        "HARNESS_MACHINE": "laptop",
        "HARNESS_BIN": str(Path(sys.executable).with_name("harness")),
    }
    event = json.dumps({**laptop.hook.__dict__, "hook_event_name": "UserPromptSubmit"})
    samples = []
    for i in range(max(RUNS // 3, 2)):
        vm.say(5)
        vm.sync()
        laptop.say(1)
        env["HARNESS_NOW"] = f"2030-01-01T{i:02d}:00:00Z"  # past the throttle every time
        start = time.perf_counter()
        proc = subprocess.run([str(script)], input=event, env=env, capture_output=True, text=True)
        samples.append((time.perf_counter() - start) * 1000)
        assert "added 5 messages" in proc.stdout, proc.stderr
    return samples


if __name__ == "__main__":
    main()
