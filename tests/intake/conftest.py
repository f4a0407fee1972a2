"""What the intake tests share: one poll cycle in-process, a poll-slack (or listen) process to
kill, and the invariant every crash test ends on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness_cli.services.git import Git
from tests.conftest import payloads


def poll(cli, *, ok: bool = True) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    code, out, err = cli("poll-slack", "--json")
    if ok:
        assert code == 0, out + err
    data: dict[str, Any] = json.loads(out)["data"] if out.strip() else {}
    return data


def no_intake_rate(config: Path) -> None:
    """Flood control off (#28 R13): these tests send one customer's tickets by the dozen to
    prove something else (exactly once, under kills and races)."""
    path = config / "harness.yaml"
    path.write_text(path.read_text() + "intake_rate: {per_user: null, per_channel: null}\n")


def spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``harness ARGS`` as its own process (the environment the test set up, plus ``env``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness_cli", *args],
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def thread_replies(emu: Any, channel: str, ts: str) -> list[dict[str, Any]]:
    return [m for m in emu.messages(channel) if m.get("thread_ts") == ts and m["ts"] != ts]


def case_threads(emu: Any, case_id: str) -> list[dict[str, Any]]:
    """The harness's top-level posts in the self-DM that open case ``case_id``'s thread."""
    return [
        m
        for m in emu.messages("D0SELF")
        if not m.get("thread_ts") and f"case *{case_id}*" in m["text"]
    ]


def assert_exactly_once(tmp_path: Path, emu: Any, tickets: list[dict[str, Any]]) -> None:
    """The invariant of the per-message lifecycle: every ticket Slack shows has exactly one
    case (committed to the workspace), one case thread and one investigation dispatch."""
    root = tmp_path / "workspace"
    cases = root / "case-workspaces"
    sent = [p["case_id"] for p in payloads(tmp_path, "investigate")]
    git = Git(root)
    dirty = git.status_porcelain()
    problems: list[str] = []
    for msg in tickets:
        case_id = f"slack-C0SUPPORT-{msg['ts'].replace('.', '-')}"
        folder = cases / case_id
        if not (folder / "case.json").exists() or not (folder / "message.json").exists():
            problems.append(f"{case_id}: lost (no case files)")
            continue
        if not git.run("ls-tree", "HEAD", "--", f"case-workspaces/{case_id}/case.json"):
            problems.append(f"{case_id}: not committed")
        if sent.count(case_id) != 1:
            problems.append(f"{case_id}: {sent.count(case_id)} investigate dispatches")
        threads = len(case_threads(emu, case_id))
        if threads != 1:
            problems.append(f"{case_id}: {threads} case threads")
    if "case-workspaces" in dirty:
        problems.append(f"workspace left dirty: {dirty}")
    assert not problems, "\n".join(problems)
