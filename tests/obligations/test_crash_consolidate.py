"""#17 point 8 for `consolidate`: SIGKILL the real `harness consolidate CASE` at each write step
(the run recorded, TASK.md written, the transcripts marked, the case folder committed and
pushed) and at random instants; then one clean run finishes the work exactly once — the
conversation folded into TASK.md once, every transcript marked, one consolidation on record,
nothing uncommitted in the case folder, and (at each write step) the consolidator asked once in
all, counted on the Anthropic emulator's request log."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from harness_cli.faults import ENV
from harness_cli.memory.transcripts import list_all
from harness_cli.services.git import Git
from tests.memory.conftest import CASE, Memory, mem  # noqa: F401
from tests.obligations.campaign import FULL, RANDOM, assert_clean, harness, record

T0 = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
SECTION = "## Decisions from the follow-up conversation"
STEPS = (
    ["run.consolidate.started", "run.consolidate.task_written", "run.consolidate.marked",
     "workspace.committed:1"]
    if FULL else ["run.consolidate.task_written"]
)  # fmt: skip
"""consolidate's write steps: the run recorded, TASK.md replaced, the transcripts marked and the
consolidation remembered, the case folder committed and pushed."""


def _talked(mem: Memory, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("HARNESS_NOW", T0.isoformat())
    mem.open_case()
    mem.reply("Rounding? The order log line is 'total=50.00'.")
    mem.followup()
    mem.reply("OK, we decided: only the comparison changes.")
    mem.followup()


def _consolidate(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return harness("consolidate", CASE, "--json", env=env)


def _figures(mem: Memory) -> dict[str, Any]:  # noqa: F811
    folder = mem.case_dir()
    task = (folder / "TASK.md").read_text()
    marked = list_all(folder)
    memory = json.loads((folder / "memory.json").read_text())
    written = [c for c in memory.get("consolidations", []) if c["outcome"] == "written"]
    dirty = Git(mem.root / "workspace").status_porcelain().splitlines()
    return {
        "duplicates": max(0, task.count(SECTION) - 1) + max(0, len(written) - 1),
        "lost": int(SECTION not in task)
        + sum(1 for t in marked if not t.consolidated)
        + int(not written),
        "stuck": 0,
        "uncommitted": len([ln for ln in dirty if f"case-workspaces/{CASE}/" in ln]),
        "detail": [task[-400:], [t.consolidated for t in marked], written, dirty],
    }


def _clean_run(mem: Memory) -> dict[str, Any]:  # noqa: F811
    mem.script()  # the model's script starts over with the next run
    mem.consolidate(CASE)
    mem.consolidate(CASE)  # and a later run redoes nothing
    return _figures(mem)


@pytest.mark.parametrize("point", STEPS)
def test_consolidate_killed_at_each_write_step_is_finished_exactly_once(
    mem: Memory,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    point: str,
) -> None:
    _talked(mem, monkeypatch)
    asked = len(mem.requests("consolidator"))
    proc = _consolidate({ENV: point})
    _, err = proc.communicate(timeout=120)
    killed = proc.returncode == -signal.SIGKILL
    assert killed, (point, proc.returncode, err.decode()[-1500:])
    figures = _clean_run(mem)
    # one consolidator call in all: a run resumed after TASK.md was written reads the dead
    # run's task_written checkpoint instead of asking again (on main: 2 calls at that step)
    calls = len(mem.requests("consolidator")) - asked
    figures["duplicates"] += max(0, calls - 1)
    figures["detail"].append({"consolidator_calls": calls})
    record("consolidate", point, {"killed": int(killed), **figures})
    assert_clean(figures)
    assert calls == 1, calls


@RANDOM
@pytest.mark.parametrize("seed", [2030, 2031, 2032])
def test_consolidate_killed_at_a_random_instant_is_finished_exactly_once(
    mem: Memory,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
) -> None:
    _talked(mem, monkeypatch)
    proc = _consolidate({})
    time.sleep(random.Random(seed).uniform(0.5, 3.0))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    killed = proc.returncode == -signal.SIGKILL
    figures = _clean_run(mem)
    record("consolidate", f"random:{seed}", {"killed": int(killed), **figures})
    assert_clean(figures)
