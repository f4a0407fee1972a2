"""Followup prompt size over a scripted 30-reply conversation, with and without consolidation.

One case (TASK.md and ANALYSIS.md as an investigation leaves them), a case thread on the Slack
emulator, and 30 operator replies, ten minutes apart (``HARNESS_NOW``): every fifth settles
something, every seventh names a commit. Each reply runs ``harness followup`` on the anthropic
runtime against the Anthropic emulator (``sandbox/scripts/memory.yaml``). With consolidation,
the followup dispatches ``consolidate`` inline whenever consolidate_trigger fires; without it,
the dispatch is only recorded, so the raw transcripts keep piling up.

Per turn: the followup prompt's characters (the part that grows: the cached SOP/KB prefix is
the same every turn) and the whole request body. Goal: turn 30 ≤ 2× turn 2 with consolidation.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _inprocess import environment, harness  # noqa: E402

from harness_cli.sandbox.anthropic_api import AnthropicEmulator  # noqa: E402
from harness_cli.sandbox.model_script import RequestView  # noqa: E402
from harness_cli.sandbox.slack_api import SlackEmulator  # noqa: E402

REPLIES = 30
CASE = "AAA-101"
T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
TICKET = (
    "Bulk discount is not applied to orders of exactly 10 units. The README says 10 % off from "
    "10 units on, and an order of 10 × 5.00 is charged 50.00 instead of 45.00. (AAA-101)"
)
TOPICS = (
    "the README wording for the threshold",
    "orders of 11 units and more",
    "the rounding of 5.00 amounts",
    "the order-service request log for last Tuesday",
    "customers who were overcharged since the rule changed",
    "whether the rate constant is shared with the invoicing job",
)


def conversation(n: int = REPLIES) -> list[str]:
    out: list[str] = []
    for i in range(1, n + 1):
        topic = TOPICS[i % len(TOPICS)]
        text = (
            f"Reply {i}: about {topic} — can you check what the case folder says, and tell me "
            f"whether it changes the plan? I am looking at the dashboard for {topic} meanwhile, "
            "so a short answer is fine."
        )
        if i % 5 == 0:
            text += f" OK, we decided: {topic} stays out of this MR."
        if i % 7 == 0:
            text += f" FYI the hotfix branch is at {0x3F2A9C1 + i:07x}."
        out.append(text)
    return out


def seed_case(root: Path, slack: SlackEmulator) -> str:
    """The case as an investigation leaves it; returns the case thread's ts."""
    from harness_cli.config import load_config
    from harness_cli.workspace import registry

    (root / "ticket.txt").write_text(TICKET + "\n")
    harness("case", "new", "--project", "team-a", "--id", CASE, "--title", CASE,
            "--text", str(root / "ticket.txt"))  # fmt: skip
    folder = registry.case_dir(CASE)
    (folder / "TASK.md").write_text(
        f"# {CASE} — what to do\n\nInvestigation: `exit=complete confidence=88%`\n\n"
        "## May run by itself (confidence ≥ auto-run bar, non-destructive)\n\n"
        "- change the comparison to >= in pricing/discount.py — verify: python -m pytest -q "
        "tests/test_discount.py; expect 5 passed (in the MR pipeline)\n"
    )
    (folder / "ANALYSIS.md").write_text(
        f"# {CASE} — analysis\n\n`exit=complete confidence=88%`\n\n## Root cause\n\n"
        "bulk_discount uses > instead of >= against BULK_THRESHOLD, so exactly 10 units get "
        "no discount\n\n- [HARD] pricing/discount.py: `if quantity > BULK_THRESHOLD:`\n"
        "- [HARD] 10 × 5.00 charged 50.00 instead of 45.00 (message.json)\n"
    )
    thresholds = load_config().harness.thresholds
    for step in ("investigating", "awaiting_approval"):
        with registry.update_case(CASE, thresholds, step) as case:
            case.move(step, by="bench")
    parent = slack.post_as(
        "D0SELF",
        "U0OPERATOR",
        f"New ticket → case *{CASE}*",
        metadata={"event_type": "harness_post", "event_payload": {"kind": "post"}},
    )
    registry.register_thread(
        registry.load_case(CASE), channel="D0SELF", thread_ts=parent["ts"], role="case_thread"
    )
    return str(parent["ts"])


def one_run(consolidate: bool) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-followup-"))
    model = AnthropicEmulator("memory")
    slack = SlackEmulator()
    model.start()
    slack.start()
    try:
        shutil.copytree(REPO / "agent-config", root / "agent-config")
        shutil.copytree(REPO / "sops", root / "sops")
        env = {
            "HARNESS_HOME": str(root / "home"),
            "HARNESS_WORKSPACE": str(root / "workspace"),
            "HARNESS_CONFIG": str(root / "agent-config"),
            "HARNESS_DISPATCH": "inline" if consolidate else "record",
            "HARNESS_RUNTIME": "anthropic",
            "HARNESS_NOW": T0.isoformat(),
            "ANTHROPIC_BASE_URL": model.url,
            "ANTHROPIC_API_KEY": "sk-ant-bench-0000",
            "SLACK_API_URL": slack.url + "/api/",
            "SLACK_USER_TOKEN": "xoxp-bench-operator",
        }
        with environment(env):
            harness("init")
            parent = seed_case(root, slack)
            for i, text in enumerate(conversation()):
                os.environ["HARNESS_NOW"] = (T0 + timedelta(minutes=10 * i)).isoformat()
                slack.post_as("D0SELF", "U0OPERATOR", text, thread_ts=parent)
                harness("followup", CASE, "--json")
        if model.unmatched():
            raise SystemExit(f"unscripted model calls: {model.unmatched()}")
        bodies = [r.json_body() for r in model.recorded("/v1/messages")]
        firsts = [
            b for b in bodies
            if RequestView.from_body(b).role == "followup" and RequestView.from_body(b).turn == 0
        ]  # fmt: skip
        folder = root / "workspace" / "case-workspaces" / CASE
        metas = [_meta(p) for p in sorted(folder.glob("followup_transcript_*.md"))]
        return {
            "prompt": [m["prompt_chars"] for m in metas],
            "request": [len(json.dumps(b)) for b in firsts],
            "consolidations": sum(RequestView.from_body(b).role == "consolidator" for b in bodies),
            "left_out": sum(len(m.get("left_out") or []) for m in metas),
        }
    finally:
        model.stop()
        slack.stop()
        shutil.rmtree(root, ignore_errors=True)


def _meta(path: Path) -> dict[str, Any]:
    from harness_cli.memory.transcripts import parse

    return parse(path.read_text())[0].model_dump(mode="json")


def main() -> None:
    runs = {"with consolidation": one_run(True), "without": one_run(False)}
    print(f"followup prompt size over a scripted {REPLIES}-reply conversation (anthropic runtime)")
    print("  turn | " + " | ".join(f"{name:^28}" for name in runs))
    print("       | " + " | ".join(f"{'prompt chars':>13} {'request B':>14}" for _ in runs))
    for i in range(REPLIES):
        cells = [f"{r['prompt'][i]:13,d} {r['request'][i]:14,d}" for r in runs.values()]
        print(f"  {i + 1:4d} | " + " | ".join(cells))
    print()
    for name, r in runs.items():
        ratio = r["prompt"][29] / r["prompt"][1]
        print(
            f"  {name:<19} turn 2: {r['prompt'][1]:,} chars, turn 30: {r['prompt'][29]:,} chars, "
            f"ratio {ratio:.2f}x (request bodies {r['request'][29] / r['request'][1]:.2f}x); "
            f"{r['consolidations']} consolidation(s), {r['left_out']} transcript(s) left out"
        )
    figure = runs["with consolidation"]["prompt"][29] / runs["with consolidation"]["prompt"][1]
    print(f"  goal: turn 30 ≤ 2x turn 2 with consolidation — {'met' if figure <= 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
