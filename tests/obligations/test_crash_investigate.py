"""#17 point 8 for `investigate`: SIGKILL the real `harness investigate` process at each write
step (and at random instants), then one clean run must finish the work exactly once — one draft
in the case thread, the case out of `investigating`, nothing uncommitted in the workspace.

Before, a run killed between publishing and posting left the case `awaiting_approval` with no
draft, and a rerun investigated again and posted a second one."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from typing import Any

import pytest

from harness_cli import paths
from harness_cli.faults import ENV
from harness_cli.services.git import Git
from tests.investigation.conftest import CASE, TICKET, Investigation
from tests.obligations.campaign import FULL, assert_clean, harness, record


def _investigate(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return harness("investigate", CASE, "--json", env=env, stdout=subprocess.PIPE)


def _drafts(emu: Any, thread_ts: str) -> list[dict[str, Any]]:
    return [
        m for m in emu.messages("D0SELF")
        if m.get("thread_ts") == thread_ts and m["text"].startswith("`exit=complete")
    ]  # fmt: skip


def _run_ended() -> bool:
    """Whether the investigate run recorded its own end (a kill after that kills no work)."""
    records = list((paths.home() / "runs").glob(f"investigate-{CASE}-*.json"))
    return any(json.loads(p.read_text()).get("state") == "done" for p in records)


def _opened(inv: Investigation, slack_emu: Any) -> str:
    inv.script("inv_honest")
    slack_emu.post_as("C0SUPPORT", "U0CUSTOMER", f"{TICKET} ({CASE})")
    assert inv.cli("poll-slack")[0] == 0
    [thread] = [m for m in slack_emu.messages("D0SELF") if not m.get("thread_ts")]
    return str(thread["ts"])


def _figures(inv: Investigation, slack_emu: Any, thread_ts: str) -> dict[str, Any]:
    drafts = _drafts(slack_emu, thread_ts)
    dirty = Git(inv.root / "workspace").status_porcelain().splitlines()
    spinning = [
        m for m in slack_emu.messages("D0SELF")
        if m.get("thread_ts") == thread_ts and "investigate" in m["text"] and "…" in m["text"]
    ]  # fmt: skip
    return {
        "duplicates": max(0, len(drafts) - 1),
        "lost": int(not drafts),
        "stuck": int(inv.case_json()["status"] != "awaiting_approval") + len(spinning),
        "uncommitted": len([ln for ln in dirty if f"case-workspaces/{CASE}/" in ln]),
        "detail": [m["text"][:60] for m in slack_emu.messages("D0SELF")] + dirty,
    }


def _assert_finished_once(inv: Investigation, slack_emu: Any, thread_ts: str) -> None:
    assert_clean(_figures(inv, slack_emu, thread_ts))


STEPS = (
    ["run.investigate.started", "workspace.committed:1", "run.investigate.published",
     "outbox.attempting:2", "outbox.landed:2"]
    if FULL else ["run.investigate.published", "outbox.landed:2"]
)  # fmt: skip
"""The durable steps of one investigate run with its post, by crash point and hit."""


@pytest.mark.parametrize("point", STEPS)
def test_investigate_killed_at_each_write_step_is_finished_exactly_once_by_the_next_run(
    inv: Investigation, slack_emu: Any, point: str
) -> None:
    thread_ts = _opened(inv, slack_emu)
    proc = _investigate({ENV: point})
    _, err = proc.communicate(timeout=120)
    killed = proc.returncode == -signal.SIGKILL
    assert killed, (point, proc.returncode, err.decode()[-800:])

    inv.script("inv_honest")  # the model's script starts over with the next run
    proc = _investigate()  # one clean run
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-1500:]
    assert json.loads(out)["data"]["status"] == "awaiting_approval"
    assert inv.cli("poll-slack")[0] == 0  # and a later cycle redoes nothing
    figures = _figures(inv, slack_emu, thread_ts)
    record("investigate", point, {"killed": int(killed), **figures})
    assert_clean(figures)


@pytest.mark.parametrize("seed", [2020, 2021, 2022, 2023] if FULL else [2020])
def test_investigate_killed_at_random_instants_is_finished_exactly_once(
    inv: Investigation, slack_emu: Any, seed: int
) -> None:
    rng = random.Random(seed)
    thread_ts = _opened(inv, slack_emu)
    kills = 0
    for _ in range(3):
        proc = _investigate()
        time.sleep(rng.uniform(0.6, 2.5))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        kills += proc.returncode == -signal.SIGKILL
        inv.emu.load_script("inv_honest")  # the model's script starts over with the next run
        if _run_ended():
            # On a fast machine a run can end before its kill lands: the work is done, and
            # another `harness investigate` would be the operator asking for a new one.
            break
    else:
        assert kills >= 1
        proc = _investigate()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()[-1500:]
    figures = _figures(inv, slack_emu, thread_ts)
    record("investigate", f"random:{seed}", {"killed": kills, **figures})
    assert_clean(figures)


def test_a_killed_run_nobody_restarts_is_resumed_by_the_next_poll_cycle(
    inv: Investigation, slack_emu: Any
) -> None:
    """Its dispatcher died with it: poll-slack finds the run record still `running` with its
    process gone, re-dispatches it as a resume, and that run finishes the work once."""
    from tests.conftest import payloads

    thread_ts = _opened(inv, slack_emu)
    proc = _investigate({ENV: "run.investigate.started"})
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    [record] = (inv.root / "harness-home" / "runs").glob("investigate-*.json")
    past = time.time() - 120  # dead for longer than run_resume_grace_seconds
    os.utime(record, (past, past))
    before = len(payloads(inv.root, "investigate"))
    assert inv.cli("poll-slack")[0] == 0
    resumed = payloads(inv.root, "investigate")[before:]
    assert [p["trigger"]["kind"] for p in resumed] == ["resume"], resumed
    inv.script("inv_honest")
    [path] = sorted((inv.root / "harness-home" / "payloads").glob("*investigate*.json"))[-1:]
    code, _, err = inv.cli("investigate", "--payload", str(path), "--json")
    assert code == 0, err
    assert json.loads(record.read_text())["state"] == "done"
    assert inv.cli("poll-slack")[0] == 0  # nothing is re-dispatched again
    assert len(payloads(inv.root, "investigate")) == before + 1
    assert_clean(_figures(inv, slack_emu, thread_ts))
