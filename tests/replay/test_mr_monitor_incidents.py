"""Replays of the reference's mr-monitor incidents (Layer 1 and Layer 4), on both forges: the
GitLab emulator through python-gitlab and the GitHub emulator through PyGithub, with
HARNESS_DISPATCH=record."""

from __future__ import annotations

from pathlib import Path

from harness_cli.state import files
from harness_cli.state.models import MonitoredMr
from tests.delivery import test_mr_monitor as shared
from tests.delivery.test_mr_monitor import CASE, PATH, World, git

# The sandbox fixtures of the mr-monitor tests, registered here too.
emu = shared.emu
world = shared.world

BRANCH = "harness/AAA-1"


def test_eighty_noop_fix_ci_commits_in_one_afternoon_cannot_happen(world: World) -> None:
    """ "Early on, one MR with a flaky integration test picked up 80 no-op "fix CI" commits in a
    single afternoon before anyone noticed." Here the dev-agent is as bad as it was then: every
    fix run pushes an empty "fix CI" commit, and the flaky test fails every pipeline."""
    iid = world.open_mr(BRANCH, result="failed")
    pushed = 0
    for _ in range(80):
        before = len(world.dispatched())
        world.cycle()
        if len(world.dispatched()) > before:
            world.force("failed")
            git(world.clone, "checkout", "-q", BRANCH)
            git(world.clone, "commit", "-q", "--allow-empty", "-m", "fix CI")
            git(world.clone, "push", "-q", "origin", f"HEAD:{BRANCH}")
            world.wait_ci()
            pushed += 1
    assert len(world.dispatched("fix_ci")) == 3 and pushed == 3
    assert len([t for t in world.dms() if "still red" in t]) == 1
    entry = world.entry(iid)
    assert entry is not None and entry["escalated"] and entry["paused"]


def test_a_handled_pipeline_or_a_red_rerun_on_the_same_sha_is_never_fixed_again(
    world: World,
) -> None:
    """A fix run that produced no diff pushes nothing; the flaky pipeline is then retried (same
    id) and re-run (new id, same sha). Neither is a new failure."""
    iid = world.open_mr(BRANCH, result="failed")
    world.cycle()
    [fix] = world.dispatched("fix_ci")
    world.force("failed")
    world.retry_pipeline(fix["args"]["pipeline_id"])  # same pipeline id, red again
    world.note(iid, "Retried the flaky job.", author="harness-bot")  # the MR is re-read
    for _ in range(5):
        world.cycle()
    world.force("failed")
    rerun = world.new_pipeline(BRANCH)  # new id, same sha, red again
    world.note(iid, "Re-ran the pipeline.", author="harness-bot")
    for _ in range(5):
        world.cycle()
    entry = world.entry(iid)
    assert entry is not None and entry["last_pipeline_id"] == rerun
    assert entry["fix_ci_attempts"] == 1 and not entry["escalated"]
    assert len(world.dispatched()) == 1


def test_dead_cursor_storm_deleted_mrs_are_dropped_after_three_cycles(
    world: World, tmp_path: Path
) -> None:
    """ "Before the fix, a cycle made 12 retries for hours at a time. After it, none." Twelve
    monitored MRs were deleted on GitLab (and one whole project): each answers 404 once per
    cycle (one 404 may be a blip, issue #17) for ``drop_after_not_found_cycles`` cycles, is then
    dropped with one DM, and costs nothing in any later cycle."""
    world.open_mr(BRANCH, result="success")
    world.cycle()
    with files.monitored_mrs().update() as state:
        for iid in range(500, 512):
            state.mrs[f"{PATH}!{iid}"] = MonitoredMr(
                project=PATH,
                iid=iid,
                case_id=CASE,
                case_dir=str(tmp_path / "workspace" / "case-workspaces" / CASE),
                seen_updated_at="2026-11-01T00:00:00.000Z",
                ci_status="running",  # would be re-read every cycle
            )
        state.mrs["gone/project!1"] = MonitoredMr(
            project="gone/project",
            iid=1,
            case_id=CASE,
            case_dir="",
            seen_updated_at="2026-11-01T00:00:00.000Z",
        )
    for cycle in (1, 2):
        data = world.cycle()
        assert data["dropped"] == [] and data["errors"] == []
        assert len(data["deferred"]) == 13
        assert len(world.mr_calls("5")) == 12 * cycle  # one call each
    first = world.cycle()
    assert len(first["dropped"]) == 13 and first["errors"] == []
    dead = world.mr_calls("5")
    assert len(dead) == 36 and {r.status for r in dead} == {404}  # one call each, no retries
    [dm] = [t for t in world.dms() if "no longer has" in t]
    assert "13 MR(s)" in dm
    seen = len(world.emu.requests)
    for _ in range(5):
        data = world.cycle()
        # the project, its MR and pipeline listings, its target branch's head
        assert data["dropped"] == [] and data["calls"] <= 4
    assert len(world.mr_calls("5")) == 36
    assert len(world.project_calls("gone/project")) == 3
    assert len(world.emu.requests) - seen <= 20  # four a cycle, none for the dead
    assert set(world.state()["mrs"]) == {f"{PATH}!1"}
