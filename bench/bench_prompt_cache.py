"""Prompt caching across a 20-iteration investigation on the anthropic runtime (the harness's
own loop over the real SDK, against the Anthropic emulator's prompt-cache accounting).

The scripted investigator (``sandbox/scripts/inv_bench.yaml``) reads the ticket once per
iteration and reports IN_PROGRESS with a new fact, so the loop runs its whole budget. Per
iteration: the input tokens of its investigator calls (input + cache_creation + cache_read, from
``iterations/NN.json``) and the share read from the cache. Run once with caching as built and
once with ``HARNESS_PROMPT_CACHE=0``. Goal: ≥ 80 % of the input read from cache from iteration 3
on; under 60 % is a defect.

``BENCH_KB_KB=N`` pads the project's knowledge base to N KiB (default: the shipped example's
few hundred bytes), to see the figure with a production-sized SOP and knowledge base.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _inprocess import environment, harness  # noqa: E402

from harness_cli.sandbox.anthropic_api import AnthropicEmulator  # noqa: E402

ITERATIONS = 20
CASE = "AAA-101"
TICKET = (
    "Bulk discount is not applied to orders of exactly 10 units. The README says 10 % off from "
    "10 units on, and an order of 10 × 5.00 is charged 50.00 instead of 45.00. (AAA-101)"
)
KB_KIB = int(os.environ.get("BENCH_KB_KB", "0"))


def one_run(cache: bool) -> list[dict[str, int]]:
    """Per iteration: the investigator's input tokens by kind."""
    root = Path(tempfile.mkdtemp(prefix="bench-cache-"))
    emu = AnthropicEmulator("inv_bench")
    emu.start()
    try:
        config = root / "agent-config"
        shutil.copytree(REPO / "agent-config", config)
        shutil.copytree(REPO / "sops", root / "sops")
        settings = yaml.safe_load((config / "harness.yaml").read_text())
        settings["investigation"]["max_iterations"] = ITERATIONS
        (config / "harness.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
        if KB_KIB:
            kb = root / "sops" / "team-a" / "KNOWLEDGE-BASE.md"
            line = "- a past incident, its symptom, its root cause and the fix that held.\n"
            kb.write_text(kb.read_text() + line * (KB_KIB * 1024 // len(line)))
        (root / "ticket.txt").write_text(TICKET + "\n")
        env = {
            "HARNESS_HOME": str(root / "home"),
            "HARNESS_WORKSPACE": str(root / "workspace"),
            "HARNESS_CONFIG": str(config),
            "HARNESS_DISPATCH": "record",
            "HARNESS_RUNTIME": "anthropic",
            "HARNESS_PROMPT_CACHE": "1" if cache else "0",
            "ANTHROPIC_BASE_URL": emu.url,
            "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
        }
        with environment(env):
            harness("init")
            ticket = str(root / "ticket.txt")
            harness(
                "case",
                "new",
                "--project",
                "team-a",
                "--id",
                CASE,
                "--title",
                CASE,
                "--text",
                ticket,
            )
            data = json.loads(harness("investigate", CASE, "--no-post", "--json"))["data"]
        if data["iterations"] != ITERATIONS or emu.unmatched():
            raise SystemExit(f"the run did not last {ITERATIONS} iterations: {data['exit_line']}")
        folder = root / "workspace" / "case-workspaces" / CASE / "iterations"
        rows = []
        for n in range(1, ITERATIONS + 1):
            calls = json.loads((folder / f"{n:02d}.json").read_text())["calls"]
            mine = [c for c in calls if c["role"] == "investigator"]
            rows.append(
                {
                    "calls": sum(c["turns"] for c in mine),
                    "input": sum(c["input_tokens"] for c in mine),
                    "write": sum(c["cache_creation_tokens"] for c in mine),
                    "read": sum(c["cache_read_tokens"] for c in mine),
                }
            )
        return rows
    finally:
        emu.stop()
        shutil.rmtree(root, ignore_errors=True)


def total(row: dict[str, int]) -> int:
    return row["input"] + row["write"] + row["read"]


def share(rows: list[dict[str, Any]]) -> float:
    tokens = sum(total(r) for r in rows)
    return sum(r["read"] for r in rows) / tokens if tokens else 0.0


def main() -> None:
    runs = {"cached (as built)": one_run(cache=True), "caching off": one_run(cache=False)}
    kb = f", knowledge base padded to {KB_KIB} KiB" if KB_KIB else ", shipped example SOP/KB"
    print(f"prompt caching over a {ITERATIONS}-iteration investigation (anthropic runtime{kb})")
    print("  " + " " * 9 + "".join(f" | {name:^40}" for name in runs))
    print("  it  turns" + " | total in  uncached  written    read  cached" * len(runs))
    for i in range(ITERATIONS):
        line = f"  {i + 1:2d}  {runs['cached (as built)'][i]['calls']:5d}"
        for rows in runs.values():
            r = rows[i]
            line += (
                f" | {total(r):8,d} {r['input']:9,d} {r['write']:8,d} {r['read']:7,d} "
                f"{share([r]):7.1%}"
            )
        print(line)
    print()
    for name, rows in runs.items():
        later = rows[2:]
        tokens = sum(total(r) for r in later)
        print(
            f"  {name:<18} share of input read from cache from iteration 3 on: "
            f"{share(later):6.1%}  ({tokens:,} input tokens in iterations 3-{ITERATIONS})"
        )
    figure = share(runs["cached (as built)"][2:])
    verdict = "meets the goal" if figure >= 0.8 else "DEFECT" if figure < 0.6 else "below goal"
    print(f"  goal ≥ 80 %, under 60 % is a defect: {verdict}")


if __name__ == "__main__":
    main()
