"""#17 point 8 for `dev-agent --mode address_review` and `--mode fix_ci`: SIGKILL the real run
mr-monitor dispatched at each of its write steps (the commit made, the workspace committed,
the GitLab / GitHub reply in flight or landed, the Slack message in flight or landed; on both
forges by the ``forge`` parameter of ``desk``) and at random
instants; then the next mr-monitor cycle re-dispatches the dead run as a resume and that run
finishes the work exactly once — one reply per discussion, one message for the run, one MR,
one fix attempt counted, the case `mr_open`, nothing uncommitted in the case folder."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness_cli.faults import ENV
from harness_cli.services.git import Git
from tests.delivery.desk import Desk
from tests.obligations.campaign import FULL, RANDOM, assert_clean, harness, record

pytestmark = pytest.mark.slow
CASE = "RND-1"


def _dev_agent(payload: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return harness("dev-agent", "--payload", str(payload), env=env)


def _kill(desk: Desk, mode: str, point: str | None, rng: random.Random | None) -> int:
    """Run the payload mr-monitor just recorded for ``mode``, killed at ``point`` (or at a
    random instant); returns 1 when the SIGKILL landed."""
    [(path, _)] = [(p, d) for p, d in desk.payloads(mode) if str(p) not in desk.ran]
    desk.ran.append(str(path))
    proc = _dev_agent(path, {ENV: point} if point else {})
    if rng is not None:
        time.sleep(rng.uniform(1.0, 6.0))
        proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    if point:
        assert proc.returncode == -signal.SIGKILL, (point, proc.returncode, err[-1500:])
    return int(proc.returncode == -signal.SIGKILL)


def _unrecorded(desk: Desk) -> bool:
    """The payload run last is not in any run record (it died before recording its start)."""
    last = desk.ran[-1]
    records = (desk.home / "runs").glob("dev-agent-*.json")
    return not any(json.loads(r.read_text()).get("payload") == last for r in records)


def _resume(desk: Desk) -> list[dict[str, Any]]:
    """The dead run's grace passes; the next mr-monitor cycle re-dispatches it as a resume and
    the dispatcher runs what it recorded."""
    past = time.time() - 120  # dead for longer than run_resume_grace_seconds
    for stale in (desk.home / "runs").glob("dev-agent-*.json"):
        os.utime(stale, (past, past))
    if _unrecorded(desk):  # its payload waited past payload_start_grace_seconds
        older = time.time() - 700
        os.utime(desk.ran[-1], (older, older))
    desk.cycle()
    resumed = []  # only the resume: a next fix attempt the same cycle dispatched is not redone
    for path, payload in desk.payloads():
        if str(path) not in desk.ran and payload["trigger"]["kind"] == "resume":
            desk.ran.append(str(path))
            resumed.append(desk.harness("dev-agent", "--payload", str(path), expect=None))
    return resumed


def _common(desk: Desk, tmp_path: Path, since: int) -> dict[str, Any]:
    mrs = desk.mrs()
    dirty = Git(tmp_path / "workspace").status_porcelain().splitlines()
    return {
        "mrs": len(mrs),
        "stuck": int(desk.status(CASE) != "mr_open"),
        "uncommitted": len([ln for ln in dirty if f"case-workspaces/{CASE}/" in ln]),
        "posts": [p["text"][:90] for p in desk.harness_posts(since)],
        "dirty": dirty,
    }


# -- address_review ---------------------------------------------------------------------------
REVIEW_STEPS = (
    ["run.dev-agent.started", "delivery.committed", "delivery.mr_opened", "workspace.committed:1",
     "outbox.note_attempting:1", "outbox.note_landed:1", "outbox.note_landed:2",
     "outbox.attempting:1", "outbox.landed:1", "workspace.committed:2", "run.dev-agent.told"]
    if FULL else ["outbox.note_landed:1"]
)  # fmt: skip
"""address_review's write steps: its commit, the MR (GitHub: the PR) adopted and its proof of
work written, the workspace sync, each of its two replies in flight and landed, its one Slack
message."""


def _review_round(desk: Desk) -> tuple[list[str], int]:
    desk.force_ci("success", times=8)
    desk.approved_case(CASE)
    assert desk.task(CASE)["data"]["mr"]["iid"] == 1
    desk.cycle()
    since = len(desk.harness_posts())
    asked = [
        desk.note(1, "[scenario: honest] record this round somewhere"),
        desk.note(1, "[scenario: honest] what about the rounding?", author="bob"),
    ]
    desk.cycle()
    return asked, since


def _review_figures(desk: Desk, tmp_path: Path, asked: list[str], since: int) -> dict[str, Any]:
    desk.cycle()  # and a later cycle redoes nothing
    assert desk.run_dispatched(expect=None) == [], "a later cycle dispatched the round again"
    seen = _common(desk, tmp_path, since)
    replies = {
        d.id: [n.body for n in d.notes if n.author == "harness-bot" and not n.system]
        for d in desk.discussions()
        if d.id in asked
    }
    told = [p for p in seen["posts"] if "answered" in p]
    return {
        "duplicates": sum(max(0, len(r) - 1) for r in replies.values())
        + max(0, len(told) - 1)
        + max(0, seen["mrs"] - 1),
        "lost": sum(1 for r in replies.values() if not r) + int(not told),
        "stuck": seen["stuck"],
        "uncommitted": seen["uncommitted"],
        "detail": [replies, seen["posts"], seen["dirty"]],
    }


@pytest.mark.parametrize("point", REVIEW_STEPS)
def test_a_review_round_killed_at_each_write_step_is_answered_exactly_once(
    desk: Desk, tmp_path: Path, point: str
) -> None:
    asked, since = _review_round(desk)
    killed = _kill(desk, "address_review", point, None)
    _resume(desk)
    figures = _review_figures(desk, tmp_path, asked, since)
    record("dev-agent address_review", point, {"killed": killed, **figures})
    assert_clean(figures)


@RANDOM
@pytest.mark.parametrize("seed", [1720, 1721, 1722])
def test_a_review_round_killed_at_a_random_instant_is_answered_exactly_once(
    desk: Desk, tmp_path: Path, seed: int
) -> None:
    asked, since = _review_round(desk)
    killed = _kill(desk, "address_review", None, random.Random(seed))
    if killed:
        _resume(desk)
    figures = _review_figures(desk, tmp_path, asked, since)
    record("dev-agent address_review", f"random:{seed}", {"killed": killed, **figures})
    assert_clean(figures)


# -- fix_ci -----------------------------------------------------------------------------------
FIX_STEPS = (
    ["run.dev-agent.started", "workspace.committed:1", "outbox.attempting:1",
     "outbox.landed:1",
     "workspace.committed:2", "run.dev-agent.told"]
    if FULL else ["outbox.landed:1"]
)  # fmt: skip
"""fix_ci's write steps: the run recorded, the workspace sync, its one Slack message (the
closing edit), the run recorded as told."""


def _red_mr(desk: Desk) -> int:
    desk.force_ci("failed", times=2)
    desk.approved_case(CASE)
    assert desk.task(CASE)["data"]["mr"]["iid"] == 1
    since = len(desk.harness_posts())
    data = desk.cycle()
    assert len(desk.payloads("fix_ci")) == 1, data
    return since


def _fix_figures(desk: Desk, tmp_path: Path, since: int) -> dict[str, Any]:
    from harness_cli.state import files

    seen = _common(desk, tmp_path, since)  # before the next cycle records attempt 2's log
    desk.cycle()  # mr-monitor reads the run's result: attempt 1 counted, attempt 2 dispatched
    [entry] = files.monitored_mrs().read().mrs.values()
    told = [p for p in seen["posts"] if "fix" in p.lower() or "ci" in p.lower()]
    runs = [d for _, d in desk.payloads("fix_ci")]
    resumed = [d for d in runs if d["trigger"]["kind"] == "resume"]
    return {
        "duplicates": max(0, entry.fix_ci_attempts - 2)  # the killed one and the next
        + max(0, len(resumed) - 1)
        + max(0, seen["mrs"] - 1)
        + max(0, len(told) - 1),
        "lost": int(entry.fix_ci_attempts < 2) + int(not told),
        "stuck": seen["stuck"],
        "uncommitted": seen["uncommitted"],
        "detail": [entry.fix_ci_attempts, seen["posts"], seen["dirty"], len(runs)],
    }


@pytest.mark.parametrize("point", FIX_STEPS)
def test_a_ci_fix_killed_at_each_write_step_is_reported_exactly_once(
    desk: Desk, tmp_path: Path, point: str
) -> None:
    since = _red_mr(desk)
    killed = _kill(desk, "fix_ci", point, None)
    _resume(desk)
    figures = _fix_figures(desk, tmp_path, since)
    record("dev-agent fix_ci", point, {"killed": killed, **figures})
    assert_clean(figures)


@RANDOM
@pytest.mark.parametrize("seed", [1730, 1731])
def test_a_ci_fix_killed_at_a_random_instant_is_reported_exactly_once(
    desk: Desk, tmp_path: Path, seed: int
) -> None:
    since = _red_mr(desk)
    killed = _kill(desk, "fix_ci", None, random.Random(seed))
    if killed:
        _resume(desk)
    figures = _fix_figures(desk, tmp_path, since)
    record("dev-agent fix_ci", f"random:{seed}", {"killed": killed, **figures})
    assert_clean(figures)


def test_a_ci_fix_killed_before_its_run_is_recorded_is_dispatched_again(
    desk: Desk, tmp_path: Path
) -> None:
    """mr-monitor counts the fix attempt dispatched; the run dies before it records its start;
    the next cycle after payload_start_grace_seconds adopts the payload (a resume, once), the
    resume fixes CI, tells once and commits the trace log mr-monitor saved for it."""
    since = _red_mr(desk)
    [(path, _)] = desk.payloads("fix_ci")
    desk.ran.append(str(path))
    proc = _dev_agent(path, {})
    proc.send_signal(signal.SIGKILL)  # at once: long before the run is recorded
    proc.communicate(timeout=60)
    assert _unrecorded(desk)
    [resumed] = _resume(desk)
    assert resumed["exit"] == 0, resumed
    desk.ran.append(str(path))  # the original starting late stands down
    late = desk.harness("dev-agent", "--payload", str(path), expect=3)
    assert "dispatched again" in json.dumps(late), late
    figures = _fix_figures(desk, tmp_path, since)
    record("dev-agent fix_ci", "before-record", {"killed": 1, **figures})
    assert_clean(figures)
    desk.cycle()  # and the adoption is never made twice
    assert len([d for _, d in desk.payloads("fix_ci") if d["trigger"]["kind"] == "resume"]) == 1
