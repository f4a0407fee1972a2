"""Replay of the reference's Layer 3 incident: "a 14KB document shrank to 587 bytes", and the
three protections that came out of it — the UPDATE-not-REWRITE template, the output-size guard
(refused, logged, the operator told, the old TASK.md kept) and the per-case lockfile (two
consolidations racing: one runs, the other exits 3)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness_cli.memory.consolidate import size_guard
from harness_cli.memory.transcripts import list_all
from harness_cli.sandbox.httpbase import Fault
from tests.memory import conftest as shared
from tests.memory.conftest import CASE, Memory

# The memory tests' sandbox fixtures, registered here too.
model_server = shared.model_server
mem = shared.mem

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def _task_md_14kb() -> str:
    """A TASK.md grown over days of conversation: decisions, facts, commands, open items."""
    lines = ["# AAA-101 — what to do", "", "Investigation: `exit=complete confidence=88%`", ""]
    n = 0
    while len("\n".join(lines).encode()) < 14 * 1024 - 120:
        n += 1
        lines += [
            f"## Decision {n:02d} (operator, day {1 + n // 6})",
            "",
            f"- keep the rate constant in pricing/discount.py; threshold rule {n} stays >= 10",
            f"- verified with `python -m pytest -q tests/test_discount.py -k case_{n}` → passed",
            "",
        ]
    text = "\n".join(lines)
    return text + "\n" + "x" * (14 * 1024 - len(text.encode()) - 2) + "\n"


def _shrunk(size: int = 587) -> str:
    head = "# AAA-101 — what to do\n\nFix the comparison in pricing/discount.py.\n"
    return head + "." * (size - len(head.encode()) - 1)


def test_a_14kb_task_md_shrunk_to_587_bytes_is_refused_and_the_old_one_kept(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _task_md_14kb()
    assert len(old.encode()) == 14 * 1024
    folder = mem.open_case(task=old)
    monkeypatch.setenv("HARNESS_NOW", T0.isoformat())
    for text in ("we decided: only the comparison", "pushed 3f2a9c1d", "and the README?"):
        mem.reply(text)
        mem.followup()
    digest = hashlib.sha256((folder / "TASK.md").read_bytes()).hexdigest()
    mem.inline_script(
        {"consolidator": [{"reply": {"text": f"<task_md>\n{_shrunk()}\n</task_md>"}}]}
    )

    data = mem.consolidate(CASE, expect=4)["data"]

    assert data["outcome"] == "refused"
    assert (data["bytes_before"], data["bytes_after"]) == (14 * 1024, 587)
    assert "587 B, under 50% of the current 14336 B" in data["note"]
    assert hashlib.sha256((folder / "TASK.md").read_bytes()).hexdigest() == digest
    assert not any(t.consolidated for t in list_all(folder))  # still fed raw next turn
    proposal = folder / data["saved"]
    assert proposal.read_text().strip() == _shrunk().strip()
    memory = json.loads((folder / "memory.json").read_text())
    assert memory["consolidations"][-1]["outcome"] == "refused" and memory["last_refused_at"]
    told = mem.thread_posts()[-1]["text"]
    assert "Consolidation of TASK.md refused for AAA-101" in told and "TASK.md is unchanged" in told
    logged = [
        json.loads(line)
        for line in (mem.root / "harness-home" / "logs" / "agent.log").read_text().splitlines()
        if '"consolidation_refused"' in line
    ]
    assert logged and logged[-1]["bytes_after"] == 587 and logged[-1]["level"] == "warning"

    # the trigger still fires, but the quiet hour after a refusal costs no model call
    calls = len(mem.prompts("consolidator"))
    monkeypatch.setenv("HARNESS_NOW", (T0 + timedelta(minutes=30)).isoformat())
    quiet = mem.consolidate("--due")["data"]
    assert quiet["done"] == [] and len(mem.prompts("consolidator")) == calls
    monkeypatch.setenv("HARNESS_NOW", (T0 + timedelta(minutes=61)).isoformat())
    again = mem.consolidate("--due", expect=4)["data"]
    assert [d["outcome"] for d in again["done"]] == ["refused"]
    assert hashlib.sha256((folder / "TASK.md").read_bytes()).hexdigest() == digest


@pytest.mark.parametrize(
    ("before", "after", "refused"),
    [(14336, 587, True), (14336, 7167, True), (14336, 7168, False), (0, 10, False)],
)
def test_the_guard_is_half_of_the_replaced_task_md(before: int, after: int, refused: bool) -> None:
    verdict = size_guard("a" * before, "b" * after, 0.5)
    assert (verdict is not None) == refused


@pytest.mark.slow
def test_two_consolidations_racing_one_runs_the_other_exits_3(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two separate processes, as cron and a dispatched run would be; the winner's model call
    is held for 3 s so the loser arrives while it runs."""
    folder = mem.open_case()
    monkeypatch.setenv("HARNESS_NOW", T0.isoformat())
    mem.reply("we decided: only the comparison")
    mem.followup()
    mem.emu.add_fault(Fault("delay", match="/v1/messages", seconds=3.0))
    argv = [sys.executable, "-m", "harness_cli", "consolidate", CASE, "--json"]
    procs = [
        subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
            cwd=Path(mem.root),
        )
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 3], results
    loser = next(err for code, _, err in results if code == 3)
    assert "consolidate on case AAA-101 is locked by another run" in loser
    assert len(mem.prompts("consolidator")) == 1
    assert all(t.consolidated for t in list_all(folder))
    assert "## Decisions from the follow-up conversation" in (folder / "TASK.md").read_text()
