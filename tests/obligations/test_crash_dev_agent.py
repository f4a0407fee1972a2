"""#17 point 8 and #20 point 4 for `dev-agent --mode task`: SIGKILL the real process at each
write step (the worktree made but not recorded, the commit made but not pushed, the branch
pushed but no MR, the MR open but not told), then one clean run must finish the work exactly
once: one MR, the case `mr_open`, the operator told once, nothing uncommitted in the case
folder. Before, a kill between `git worktree add` and its record failed every rerun ("already
checked out"), and a commit that was never pushed reran as "nothing pushed" for ever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness_cli.faults import ENV
from harness_cli.services.git import Git
from tests.delivery.desk import Desk
from tests.obligations.campaign import FULL, assert_clean, record

pytestmark = pytest.mark.slow
CASE = "DEV-9"


def _killed_task(point: str) -> bool:
    proc = subprocess.run(
        [sys.executable, "-m", "harness_cli", "dev-agent", CASE, "--mode", "task", "--auto"],
        env={**os.environ, ENV: point},
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, (point, proc.returncode, proc.stderr[-1500:])
    return True


STEPS = (
    ["run.dev-agent.started", "worktree.added", "delivery.committed", "workspace.committed:1",
     "delivery.mr_opened", "outbox.attempting:1", "outbox.landed:1", "outbox.landed:2",
     "workspace.committed:3"]
    if FULL else ["worktree.added", "delivery.committed", "delivery.mr_opened", "outbox.landed:2"]
)  # fmt: skip
"""The steps that each left the work unfinishable before (bench/bench_crash_workflows.py walks
every write step): a worktree without its record, a commit never pushed, an MR open but the
operator not told (the rerun refused: "case is mr_open"); and the MR (GitHub: the PR) made on
the forge but neither set ready nor recorded (the rerun adopts it)."""


@pytest.mark.parametrize("point", STEPS)
def test_a_task_killed_at_each_write_step_is_finished_exactly_once(
    desk: Desk, tmp_path: Path, point: str
) -> None:
    desk.force_ci("success", times=4)
    desk.approved_case(CASE)
    killed = _killed_task(point)
    data = desk.harness("dev-agent", CASE, "--mode", "task", "--auto", expect=None)
    from harness_cli.workspace.registry import load_case

    mrs = desk.mrs()
    known = load_case(CASE).mrs
    told = [p for p in desk.harness_posts() if known and known[-1].web_url in p["text"]]
    dirty = Git(tmp_path / "workspace").status_porcelain().splitlines()
    figures = {
        "duplicates": max(0, len(mrs) - 1) + max(0, len(told) - 1),
        "lost": int(not mrs) + int(not told),
        "stuck": int(desk.status(CASE) != "mr_open") + int(data["exit"] != 0),
        "uncommitted": len([ln for ln in dirty if f"case-workspaces/{CASE}/" in ln]),
        "detail": [data.get("message"), [p["text"][:80] for p in desk.harness_posts()], dirty],
    }
    record("dev-agent task", point, {"killed": int(killed), **figures})
    assert_clean(figures)


@pytest.mark.parametrize("forge", ["github"])  # GitLab sets draft and title in one write
def test_ready_for_review_killed_between_the_pr_edit_and_the_flip_is_ready_after_a_rerun(
    desk: Desk, forge: str
) -> None:
    """GitHub's ready-for-review is a second write after the PR's edit (a GraphQL mutation):
    the operator's ``accept-checks`` killed between the two leaves the new proof on a PR still
    a draft; the rerun makes it ready, once, with no second PR and no doubled title."""
    desk.force_ci("success", times=3)
    desk.approved_case("WEAK-1")
    assert desk.task("WEAK-1")["data"]["mr"]["ready"] is False
    proc = subprocess.run(
        [sys.executable, "-m", "harness_cli", "admin", "accept-checks WEAK-1", "--json"],
        env={**os.environ, ENV: "forge.pr_patched"},
        capture_output=True,
        timeout=300,
        check=False,
    )
    killed = proc.returncode == -signal.SIGKILL
    assert killed, (proc.returncode, proc.stderr[-1500:])
    assert desk.mr()["title"].startswith("Draft: ")  # the edit landed, the flip did not
    done = desk.harness("admin", "accept-checks WEAK-1")
    assert "is ready" in done["data"]["reply"], done
    pr = desk.mr()
    figures = {
        "duplicates": max(0, len(desk.mrs()) - 1) + int(pr["title"].count("Draft") > 0),
        "lost": int("The harness ran the required checks itself" not in pr["description"]),
        "stuck": int(desk.status("WEAK-1") != "mr_open"),
        "uncommitted": 0,
        "detail": [pr["title"], done["data"]["reply"]],
    }
    record("accept-checks ready-for-review", "forge.pr_patched", {"killed": 1, **figures})
    assert_clean(figures)
