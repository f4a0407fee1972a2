"""#17 point 8 for `finalize`: SIGKILL the real `harness finalize CASE` at each write step (the
run recorded, the improvement branch committed and pushed, the MR opened, the verdicts and
finalize.json committed, the DM in flight or landed) and at random instants; then one clean run
finishes the work exactly once — one improvement MR, the operator told once, the case recorded
`open` in patch-pr-state.json and in its committed finalize.json, nothing uncommitted."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from typing import Any

import pytest

from harness_cli.faults import ENV
from harness_cli.services.git import Git
from tests.improvement.conftest import ready  # noqa: F401
from tests.improvement.corpus import gap_report
from tests.improvement.test_finalize import (  # noqa: F401
    CASE,
    World,
    github_emu,
    gitlab_emu,
    model,
    world,
)
from tests.obligations.campaign import FULL, RANDOM, assert_clean, harness, record

pytestmark = pytest.mark.slow
STEPS = (
    ["run.finalize.started", "delivery.committed", "delivery.mr_opened", "run.finalize.proposed",
     "workspace.committed:1", "outbox.attempting:1", "outbox.landed:1"]
    if FULL else ["run.finalize.proposed"]
)  # fmt: skip
"""finalize's write steps: the run recorded, the improvement commit, the MR open and recorded,
the case folder committed, the DM in flight and landed."""


def _finalize(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return harness("finalize", CASE, "--json", env=env)


def _figures(world: World) -> dict[str, Any]:  # noqa: F811
    told = [t for t in world.dms() if f"finalize {CASE}" in t]
    entry = world.state("patch-pr-state.json").get("cases", {}).get(CASE, {})
    dirty = Git(world.root / "workspace").status_porcelain().splitlines()
    folder = world.root / "workspace" / "case-workspaces" / CASE
    done = folder / "finalize.json"
    recorded = json.loads(done.read_text()).get("status") if done.exists() else ""
    accepted = "status: accepted" in (folder / "gap_report_001.md").read_text()
    return {
        "duplicates": max(0, len(world.mrs()) - 1) + max(0, len(told) - 1),
        "lost": int(not world.mrs()) + int(not told) + int(recorded != "open") + int(not accepted),
        "stuck": int(entry.get("status") != "open"),
        "uncommitted": len([ln for ln in dirty if f"case-workspaces/{CASE}/" in ln]),
        "detail": [told, entry, recorded, dirty],
    }


def _clean_run(world: World) -> dict[str, Any]:  # noqa: F811
    world.model.load_script("improvement")  # the model's script starts over with the next run
    code, out, err = world.cli("finalize", CASE, "--json")
    assert code == 0, err + out
    assert world.cli("finalize", CASE, "--json")[0] == 0  # and a later run redoes nothing
    return _figures(world)


@pytest.mark.parametrize("point", STEPS)
def test_finalize_killed_at_each_write_step_is_finished_exactly_once(
    world: World,  # noqa: F811
    point: str,
) -> None:
    world.case(CASE, gap_report(confidence=85))
    proc = _finalize({ENV: point})
    _, err = proc.communicate(timeout=300)
    killed = proc.returncode == -signal.SIGKILL
    assert killed, (point, proc.returncode, err.decode()[-1500:])
    figures = _clean_run(world)
    record("finalize", point, {"killed": int(killed), **figures})
    assert_clean(figures)


@RANDOM
@pytest.mark.parametrize("seed", [2040, 2041, 2042])
def test_finalize_killed_at_a_random_instant_is_finished_exactly_once(
    world: World,  # noqa: F811
    seed: int,
) -> None:
    world.case(CASE, gap_report(confidence=85))
    proc = _finalize({})
    time.sleep(random.Random(seed).uniform(0.8, 6.0))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=120)
    killed = proc.returncode == -signal.SIGKILL
    figures = _clean_run(world)
    record("finalize", f"random:{seed}", {"killed": int(killed), **figures})
    assert_clean(figures)
