"""[obligations #20] outage campaign at the one door out: 50 cases' workflows each owe their
result post (and a status edit) while Slack goes through outage windows — 429 with Retry-After,
500/503, answers lost after the post was made — then recovers. A flush runs every FLUSH_EVERY
seconds, as poll-slack does. Counts, against what the Slack emulator holds at the end:

- delivered / duplicated / lost owed posts (goal all / 0 / 0);
- how long after Slack's last recovery what was owed got delivered.

Windows are 1–12 s here (the issue's 1–120 s scaled by 1/10 so the bench takes about a
minute; the mechanism has no time constant below the flush interval).
``python bench/bench_outage.py [CASES] [SEED]`` (defaults 50, 20).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.errors import HarnessError  # noqa: E402
from harness_cli.sandbox.httpbase import Fault  # noqa: E402
from harness_cli.sandbox.slack_api import SlackEmulator  # noqa: E402

DM = "D0SELF"
FLUSH_EVERY = 2.0


def main() -> int:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp, SlackEmulator() as emu:
        root = Path(tmp)
        shutil.copytree(REPO / "agent-config", root / "agent-config")
        os.environ.update(
            HARNESS_HOME=str(root / "home"),
            HARNESS_WORKSPACE=str(root / "ws"),
            HARNESS_CONFIG=str(root / "agent-config"),
            SLACK_API_URL=emu.url + "/api/",
            SLACK_USER_TOKEN="xoxp-0000000000-bench",
        )
        from harness_cli import wiring
        from harness_cli.config import load_config
        from harness_cli.outbox import flush, scope
        from harness_cli.outbox.slack_door import Owed

        cfg = load_config()
        door = wiring.outbound(cfg)
        windows: list[tuple[float, float]] = []
        start = time.monotonic()
        stop = threading.Event()

        def outages() -> None:
            t = 1.0
            while t < 40 and not stop.is_set():
                length = rng.uniform(1, 12)
                time.sleep(max(0.0, start + t - time.monotonic()))
                kind = rng.choice(["429", "5xx", "lost"])
                if kind == "429":
                    emu.add_fault(Fault(kind="status", match="chat.", status=429, times=-1,
                                        headers={"Retry-After": str(int(length) + 1)}))  # fmt: skip
                elif kind == "5xx":
                    emu.add_fault(Fault(kind="status", match="chat.", status=503, times=-1))
                else:
                    emu.add_fault(Fault(kind="lost", match="chat.postMessage", times=3))
                time.sleep(length)
                emu.control("clear_faults", {})
                windows.append((t, t + length))
                t += length + rng.uniform(0.5, 4)

        chaos = threading.Thread(target=outages, daemon=True)
        chaos.start()
        owed_at: dict[str, float] = {}
        for i in range(cases):
            time.sleep(rng.uniform(0, 40 / cases))
            case = f"CASE-{i}"
            with scope.opened(f"investigate:{case}:r1", case):
                try:
                    door.post(DM, f"{case}: the result", purpose="investigation_result")
                except (Owed, HarnessError):
                    owed_at[case] = time.monotonic() - start
            if i % max(1, int(FLUSH_EVERY * cases / 40)) == 0:
                flush.flush(door, self_dm=DM)
        chaos.join()
        stop.set()
        delivered_at: dict[str, float] = {}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            flush.flush(door, self_dm=DM)
            now = time.monotonic() - start
            texts = [m["text"] for m in emu.messages(DM)]
            for case in owed_at:
                if case not in delivered_at and f"{case}: the result" in texts:
                    delivered_at[case] = now
            if len(delivered_at) == len(owed_at):
                break
            time.sleep(FLUSH_EVERY)
        texts = [m["text"] for m in emu.messages(DM)]
    counts = [texts.count(f"CASE-{i}: the result") for i in range(cases)]
    recovered = max((end for _, end in windows), default=0.0)
    delays = [max(0.0, at - recovered) for at in delivered_at.values()]
    print(f"outage campaign: {cases} cases, {len(windows)} Slack outage windows (1-12 s)")
    print(f"  owed posts delivered: {sum(c >= 1 for c in counts)}/{cases} (goal all)")
    print(f"  duplicated:           {sum(c > 1 for c in counts)} (goal 0)")
    print(f"  lost:                 {sum(c == 0 for c in counts)} (goal 0)")
    print(f"  owed during an outage: {len(owed_at)}")
    if delays:
        print(
            f"  delivered after Slack's last recovery: median {statistics.median(delays):.1f} s, "
            f"max {max(delays):.1f} s (a flush every {FLUSH_EVERY:.0f} s; a post owed in an "
            "earlier window counts from the last one)"
        )
    return 0 if all(c == 1 for c in counts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
