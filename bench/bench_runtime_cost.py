"""What a ticket costs on each runtime, side by side in one run (#22): the demo ticket (every
workflow, Slack message to merged MR) and each case of the eval corpus (evals/investigation:
`harness investigate` + `harness review`), on the claude CLI and on the harness's own loop,
against the same scripted model in the Anthropic emulator.

Per ticket: model requests, input, cache-write, cache-read and output tokens, $, and the share
of the input read from the prompt cache from the ticket's second request on. Tokens come from
the wire (the emulator's usage per request); $ is priced from them with the harness's own table
(``services.runtime.cost_usd``: per-model input/output, cache writes 1.25×, reads 0.1×) — the
same table for both runtimes, until #18's cost meter lands. The claude CLI's own
``total_cost_usd`` and the harness's logged figure are shown beside it as a cross-check.

Goal: claude-code ≤ 2× anthropic per ticket (total), cache reads ≥ 80 % of the input from the
second request of a ticket on. Beside it, the share from each role's second request on, and
over the requests whose tools + system reach the model's minimum cacheable length (below it
the API caches nothing). The case's roles share one prefix (tools, framing, SOP/KB); the
reviewers have their own (read-only tools, no SOP or KB: their isolation), and so have the
roles with a shell (the Bash tool, the CLI's own guidance).
``BENCH_CASES=a,b`` limits the eval cases (``none``: the demo only); the claude CLI's share
needs `make claude-cli`.

``BENCH_KB_TOKENS=N`` gives every project a knowledge base of ~N tokens instead of the packaged
example's (~35 tokens): the harness's own docs stand in for one. A real project's SOP and KB
are far longer than the example's, and on the harness's own loop they decide whether the case's
shared prefix reaches the model's minimum cacheable length at all — this shows the same layout
at a realistic size. The prompts the harness ships are not padded either way.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.eval.cases import load_library  # noqa: E402
from harness_cli.eval.grader import check  # noqa: E402
from harness_cli.sandbox.anthropic_api import AnthropicEmulator  # noqa: E402
from harness_cli.sandbox.anthropic_usage import (  # noqa: E402
    count_input_tokens,
    min_cacheable_tokens,
)
from harness_cli.sandbox.demo import run_demo  # noqa: E402
from harness_cli.sandbox.model_script import RequestView  # noqa: E402
from harness_cli.sandbox.prompt_prefix import analyze, reachable_share, read_log  # noqa: E402
from harness_cli.sandbox.runner import ANTHROPIC_BODY_LOG, environment  # noqa: E402
from harness_cli.services.claude_cli import find_claude  # noqa: E402
from harness_cli.services.runtime import Usage, cost_usd  # noqa: E402

RUNTIMES = ("claude-code", "anthropic")
GOAL_RATIO = 2.0
GOAL_READ = 0.8


@dataclass
class Ticket:
    name: str
    runtime: str
    requests: int = 0
    usage: Usage | None = None
    usd: float = 0.0
    later_read: float = 0.0
    """Share of the input read from the cache from the second request on."""
    role_read: float = 0.0
    """Share read from the cache from each role's second request on: a role's first request
    writes its own tools and system (each role has its own tool set and rules)."""
    above_read: float | None = None
    """Share read from the cache from the second request on, over the requests whose tools
    and system reach the model's minimum cacheable length (None: no such request). Below it
    the API caches nothing, whatever the layout: the prompts are not padded to get there."""
    reachable: float = 0.0
    """The most of that input any layout could read (``prompt_prefix.reachable_share``): what
    an earlier request of the ticket sent before, from the start, at the model's minimum."""
    logged_usd: float = 0.0
    ok: bool = True

    def row(self) -> str:
        u = self.usage or Usage()
        mark = "" if self.ok else "  (did not end as expected)"
        return (
            f"  {self.name:<28} {self.runtime:<11} {self.requests:4d} {u.input:8,d} "
            f"{u.cache_creation:8,d} {u.cache_read:9,d} {u.output:7,d} ${self.usd:7.4f} "
            f"{self.later_read:6.1%} {self.reachable:6.1%} {self.role_read:6.1%}  "
            f"${self.logged_usd:7.4f}{mark}"
        )


def measure(name: str, runtime: str, records: list[dict[str, Any]]) -> Ticket:
    """A ticket's figures from its logged requests (usage as the emulator answered it)."""
    ticket = Ticket(name, runtime, requests=len(records), usage=Usage())
    assert ticket.usage is not None
    later, again, above = Usage(), Usage(), Usage()
    roles: set[str] = set()
    cacheable = 0
    for n, record in enumerate(records):
        usage = Usage.from_api(record["usage"])
        model = str(record["body"].get("model") or "")
        ticket.usage.add(usage)
        ticket.usd += cost_usd(model, usage)
        if n:
            later.add(usage)
            if count_input_tokens({**record["body"], "messages": []}) >= min_cacheable_tokens(
                model
            ):
                above.add(usage)
                cacheable += 1
        role = RequestView.from_body(record["body"]).role
        if role in roles:
            again.add(usage)
        roles.add(role)
    ticket.later_read, ticket.role_read = _read_share(later), _read_share(again)
    ticket.above_read = _read_share(above) if cacheable else None
    model = str(records[0]["body"].get("model") or "") if records else ""
    ticket.reachable = reachable_share(analyze(records), min_cacheable_tokens(model))
    return ticket


def _pct(share: float | None) -> str:
    return "n/a (no request above the minimum)" if share is None else f"{share:.1%}"


def _read_share(u: Usage) -> float:
    tokens = u.input + u.cache_creation + u.cache_read
    return u.cache_read / tokens if tokens else 0.0


def logged_cost(home: Path) -> float:
    """What the harness itself logged as spent (the claude CLI's ``total_cost_usd``)."""
    total = 0.0
    for log in (home / "logs").glob("agent.log*"):
        for line in log.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            if isinstance(data.get("cost_usd"), int | float) and "input_tokens" in data:
                total += float(data["cost_usd"])
    return total


def knowledge_base(tokens: int) -> str:
    """~``tokens`` of real prose for a project's KB: the harness's own docs, cut at a line."""
    text = "\n\n".join(
        p.read_text(encoding="utf-8") for p in (REPO / "README.md", REPO / "docs" / "BEHAVIOURS.md")
    )
    if tokens * 4 > len(text):
        raise SystemExit(f"BENCH_KB_TOKENS={tokens}: the docs hold ~{len(text) // 4} tokens")
    return text[: text.rindex("\n", 0, tokens * 4)] + "\n"


def seed_sops(target: Path) -> None:
    """The packaged example's sops/ at ``target``, each project's KB ~BENCH_KB_TOKENS long."""
    from harness_cli import resources

    shutil.copytree(resources.example_sops(), target)
    tokens = int(os.environ.get("BENCH_KB_TOKENS") or 0)
    if tokens:
        for kb in target.glob("*/KNOWLEDGE-BASE.md"):
            kb.write_text(knowledge_base(tokens), encoding="utf-8")


def config_root(tmp: Path) -> Path | None:
    """With BENCH_KB_TOKENS, an eval trial's agent-config/ and sops/ (else the packaged ones)."""
    from harness_cli import resources

    if not os.environ.get("BENCH_KB_TOKENS"):
        return None
    shutil.copytree(resources.example_config(), tmp / "agent-config")
    seed_sops(tmp / "sops")
    return tmp


def demo(runtime: str) -> Ticket:
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp:
        root = Path(tmp) / "demo"
        if os.environ.get("BENCH_KB_TOKENS"):
            seed_sops(root / "sops")  # the demo keeps a sops/ it finds (harness.yaml: ../sops)
        with environment({"HARNESS_RUNTIME": runtime}):
            report = run_demo(root, runtime=runtime)
        [records] = read_log(root / "sandbox" / ANTHROPIC_BODY_LOG)
        ticket = measure("demo AAA-101 (all workflows)", runtime, records)
        ticket.logged_usd, ticket.ok = logged_cost(root / "home"), report.ok
    return ticket


def corpus(runtime: str, emu: AnthropicEmulator, log: Path) -> list[Ticket]:
    from harness_cli.eval.investigation_driver import run_case

    wanted = {c for c in os.environ.get("BENCH_CASES", "").split(",") if c}
    tickets = []
    configs = Path(tempfile.mkdtemp(prefix="bench-cost-config-"))
    shared = config_root(configs)
    for case in load_library():
        if (wanted and case.id not in wanted) or runtime not in case.setup.runtimes:
            continue
        log.write_text("")
        with tempfile.TemporaryDirectory(prefix="bench-cost-lib-") as keep:
            seen = run_case(case, runtime, anthropic=emu, keep=Path(keep), config_root=shared)
            [home] = list(Path(keep).glob("*/harness-home")) or [Path(keep)]
            logged = logged_cost(home)
        runs = read_log(log)
        ticket = measure(case.id, runtime, runs[-1] if runs else [])
        ticket.ok, ticket.logged_usd = not check(case, seen), logged
        tickets.append(ticket)
    shutil.rmtree(configs, ignore_errors=True)
    return tickets


def main() -> None:
    runtimes = [r for r in RUNTIMES if r != "claude-code" or find_claude() is not None]
    if len(runtimes) < 2:
        raise SystemExit("the claude CLI is not installed (`make claude-cli`): nothing to compare")
    started = time.monotonic()
    tickets: dict[str, list[Ticket]] = {r: [demo(r)] for r in runtimes}
    if os.environ.get("BENCH_CASES") != "none":
        with tempfile.TemporaryDirectory(prefix="bench-cost-log-") as tmp:
            log = Path(tmp) / "requests.jsonl"
            emu = AnthropicEmulator(body_log=log)
            emu.start()
            try:
                for runtime in runtimes:
                    tickets[runtime] += corpus(runtime, emu, log)
            finally:
                emu.stop()
    kb = os.environ.get("BENCH_KB_TOKENS")
    print(
        "cost per ticket, claude CLI beside the harness's own loop (same scripted model); "
        + (f"each project's KB ~{kb} tokens" if kb else "the packaged example's SOPs and KB")
    )
    print(
        "  ticket                       runtime     reqs    input    write      read  output"
        "        $  read≥2nd  reachable  ≥role's 2nd  logged $"
    )
    names = [t.name for t in tickets["claude-code"]]
    for name in names:
        for runtime in runtimes:
            print(next(t for t in tickets[runtime] if t.name == name).row())
    print()
    api = {t.name: t for t in tickets["anthropic"]}
    cli = {t.name: t for t in tickets["claude-code"]}
    # a ticket no model request answered (auth refused, the API down) costs nothing on either
    both = [n for n in names if n in api and api[n].usd > 0]
    totals = {r: sum(t.usd for t in tickets[r] if t.name in both) for r in runtimes}
    ratios = sorted(cli[n].usd / api[n].usd for n in both)
    ratio = totals["claude-code"] / max(1e-9, totals["anthropic"])
    demo_ratio = cli[names[0]].usd / max(1e-9, api[names[0]].usd)
    print(
        f"  {len(both)} tickets on both runtimes: claude-code ${totals['claude-code']:.4f}, "
        f"anthropic ${totals['anthropic']:.4f} = {ratio:.2f}× (goal ≤ {GOAL_RATIO:g}×); "
        f"{len(names) - len(both)} more answered by no model request"
    )
    print(
        f"  the demo ticket: {demo_ratio:.2f}×; per ticket: median "
        f"{ratios[len(ratios) // 2]:.2f}×, worst {ratios[-1]:.2f}×, over {GOAL_RATIO:g}×: "
        f"{sum(1 for r in ratios if r > GOAL_RATIO)}"
    )
    for runtime in runtimes:
        mine = [t for t in tickets[runtime][1:] if t.requests > 1] or tickets[runtime][:1]
        low = [t.name for t in mine if t.later_read < GOAL_READ]
        share = sorted(t.later_read for t in mine)
        demo_share = tickets[runtime][0].later_read
        print(
            f"  {runtime:<11} cache reads from the 2nd request of a ticket on: the demo "
            f"{demo_share:.1%}; the eval cases median {share[len(share) // 2]:.1%}, lowest "
            f"{share[0]:.1%}, highest {share[-1]:.1%}; {len(low)}/{len(mine)} under "
            f"{GOAL_READ:.0%}"
        )
        reach = sorted(t.reachable for t in mine)
        print(
            f"  {'':<11} the most any layout could read there (what an earlier request of the "
            f"ticket sent before): the demo {tickets[runtime][0].reachable:.1%}; the eval cases "
            f"median {reach[len(reach) // 2]:.1%}, lowest {reach[0]:.1%}; "
            f"{sum(1 for r in reach if r < GOAL_READ)}/{len(mine)} under {GOAL_READ:.0%} even so"
        )
        again = sorted(t.role_read for t in mine)
        print(
            f"  {'':<11} from each role's 2nd request on: the demo "
            f"{tickets[runtime][0].role_read:.1%}; the eval cases median "
            f"{again[len(again) // 2]:.1%}, lowest {again[0]:.1%}; "
            f"{sum(1 for r in again if r < GOAL_READ)}/{len(mine)} under {GOAL_READ:.0%}"
        )
        above = sorted(t.above_read for t in mine if t.above_read is not None)
        demo_above = tickets[runtime][0].above_read
        print(
            f"  {'':<11} over the requests whose tools + system reach the model's minimum "
            f"cacheable length: the demo {_pct(demo_above)}; the eval cases "
            + (
                f"median {above[len(above) // 2]:.1%}, lowest {above[0]:.1%} ({len(above)}/"
                f"{len(mine)} cases have such requests)"
                if above
                else f"none of {len(mine)} has such a request"
            )
        )
    bad = [f"{t.runtime}/{t.name}" for r in runtimes for t in tickets[r] if not t.ok]
    print(f"  tickets that did not end as expected: {', '.join(bad) or 'none'}")
    print(f"  wall time {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
