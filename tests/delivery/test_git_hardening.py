"""Agent-writable trees are data to the harness, never code (#28 R1, R7, R8), end to end:
`harness dev-agent` on the emulators (Slack, GitLab with real git, the scripted model), the
harness's own tool loop or the real claude CLI, real worktrees.

- R1: the agent points the worktree's ``.git`` at a git dir of its making whose config runs a
  command; the harness's next git call must not run it, and no token may reach anything.
- R7: in the claude CLI's sandbox the agent may write its repository's objects, refs and logs,
  and nothing else of the common dir (HEAD, packed-refs, info/exclude, config, hooks).
- R8: one case's agent cannot see another case's branch, nor move it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.runner import SANDBOX_TOKENS, Sandbox
from harness_cli.services.git import Git
from tests.delivery.test_agent_boundaries import BOTH, approved_case, box, model_log

pytestmark = pytest.mark.slow
__all__ = ["box"]  # the fixture, shared with test_agent_boundaries


def leaked(box: Sandbox, tmp_path: Path, bare: Path) -> list[str]:
    """Every place a token could have gone: the model, Slack, GitLab, the remote's history."""
    places = [model_log(box)]
    places += [r.body.decode("utf-8", "replace") for r in box.slack.recorded()]
    places.append(json.dumps(box.gitlab.snapshot()))
    places.append(Git(bare).run("log", "--all", "-p", "--format=%B"))
    text = "\n".join(places)
    return [name for name, value in SANDBOX_TOKENS.items() if value in text]


@pytest.mark.parametrize("runtime", BOTH)
def test_an_agent_built_git_dir_never_runs_on_the_host(
    cli: Any,
    box: Sandbox,
    tmp_path: Path,
    runtime: str,
) -> None:
    assert cli("init")[0] == 0
    approved_case(cli, "AAA-101")
    marker = tmp_path / "pwned-env"
    box.anthropic.load_script("dev_gitdir", {"marker": str(marker)})
    bare = Path(box.gitlab.snapshot()["projects"][0]["bare_repo"])

    assert cli("admin", "task AAA-101 --auto")[0] == 0
    cli("dev-agent", "AAA-101", "--mode", "task", "--auto", "--json")

    assert not marker.exists(), marker.read_text()[:2000]  # the agent's command never ran
    wt = next((tmp_path / "worktrees").glob("case-AAA-101-*"))
    link = (wt / ".git").read_text()
    assert ".evil" not in link and (wt / ".git").is_file() and not (wt / ".git").is_symlink()
    assert not (wt / "vendor" / "lib" / ".git").exists() and not (wt / ".GIT").exists()
    assert box.anthropic.unmatched() == []
    log = model_log(box)
    # every write of a .git was refused, and said so to the model
    assert log.count("git's own (.git)") >= (4 if runtime == "anthropic" else 0), log[-3000:]
    assert "SHELL-WROTE-LINK" not in log and "shell-refused" in log  # the box pins it
    assert leaked(box, tmp_path, bare) == []


@pytest.mark.parametrize("runtime", ["anthropic"])
def test_a_rewritten_git_link_is_refused_with_one_line(
    cli: Any,
    box: Sandbox,
    tmp_path: Path,
    runtime: str,
) -> None:
    """However the link changed (the box pins it; a machine without one, or a person, may
    not), the harness checks it before each git call and refuses, naming the worktree."""
    from harness_cli.delivery import worktrees

    assert cli("init")[0] == 0
    approved_case(cli, "AAA-101")
    bare = Path(box.gitlab.snapshot()["projects"][0]["bare_repo"])
    wt = worktrees.create("AAA-101", bare.resolve().as_uri(), "acme/pricing-service", "main")
    marker = tmp_path / "pwned-env"
    evil = wt.path / ".evil"
    for sub in ("objects", "refs"):
        (evil / sub).mkdir(parents=True)
    (evil / "HEAD").write_text("ref: refs/heads/main\n")
    (evil / "config").write_text(f'[core]\n\tfsmonitor = "env > {marker}; echo"\n')
    (wt.path / ".git").write_text(f"gitdir: {evil}\n")
    box.anthropic.load_script("dev_gitdir", {"marker": str(marker)})

    assert cli("admin", "task AAA-101 --auto")[0] == 0
    code, out, err = cli("dev-agent", "AAA-101", "--mode", "task", "--auto", "--json")

    assert not marker.exists(), marker.read_text()[:2000]
    assert code != 0
    said = out + err
    assert f"refusing to run git in {wt.path}" in said, said[-2000:]
    assert [c for c in box.anthropic.calls if c.role == "dev-agent"] == []  # no agent ran


@pytest.mark.parametrize("runtime", BOTH)
def test_a_case_neither_sees_nor_moves_another_cases_branch(
    cli: Any,
    box: Sandbox,
    tmp_path: Path,
    runtime: str,
) -> None:
    from harness_cli.delivery import worktrees

    assert cli("init")[0] == 0
    bare = Path(box.gitlab.snapshot()["projects"][0]["bare_repo"])
    # another case of the same repository, with work of its own not pushed yet
    other = worktrees.create("AAA-100", bare.resolve().as_uri(), "acme/pricing-service", "main")
    (other.path / "NOTES.md").write_text("the other case's work\n")
    other.git().add(["NOTES.md"])
    other_tip = other.git().commit("The other case's work")
    approved_case(cli, "AAA-101")
    box.anthropic.load_script("dev_neighbour", {"other": other.branch})

    assert cli("admin", "task AAA-101 --auto")[0] == 0
    cli("dev-agent", "AAA-101", "--mode", "task", "--auto", "--json")

    log = model_log(box).replace("\\n", "\n")
    assert "REFS-BEGIN" in log, log[-3000:]  # the shell ran
    shown = log.split("REFS-BEGIN", 1)[1].split("REFS-END", 1)[0]
    assert "harness/AAA-101" in shown and other.branch not in shown, shown  # R8: sees its own
    assert other.git().head_sha() == other_tip  # R8: and moves nothing of the other case
    assert other.git().current_branch() == other.branch
    assert Git(bare).head_sha(f"refs/heads/{other.branch}") is None  # nothing pushed for it
    # R7: nothing of the repository's common dir but objects, refs and logs was writable
    mine = next((tmp_path / "worktrees").glob("case-AAA-101-*"))
    common = Path(Git(mine).run("rev-parse", "--path-format=absolute", "--git-common-dir"))
    for name in ("HEAD", "packed-refs", "info/exclude", "info/attributes", "config"):
        path = common / name
        assert not path.is_file() or "#agent-was-here" not in path.read_text(), name
        assert f"common-wrote {name}" not in log, name
    assert not (common / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize("runtime", BOTH)
def test_a_shadowed_test_runner_never_passes_acceptance(
    cli: Any,
    box: Sandbox,
    tmp_path: Path,
    runtime: str,
) -> None:
    """#28 R6: a ``pytest.py`` that exits 0, a ``.pytest.ini`` that only collects, and the shadow
    hidden from git: the bug stays, so the checks fail and the MR stays a draft, naming what
    shaped the run."""
    assert cli("init")[0] == 0
    approved_case(cli, "AAA-101")
    box.anthropic.load_script("dev_shadow")

    assert cli("admin", "task AAA-101 --auto")[0] == 0
    _, out, _ = cli("dev-agent", "AAA-101", "--mode", "task", "--auto", "--json")

    assert box.anthropic.unmatched() == []
    data = json.loads(out)["data"]
    mrs = box.gitlab.snapshot()["merge_requests"]
    assert all(mr["title"].startswith("Draft: ") for mr in mrs), mrs
    assert not (data.get("mr") or {}).get("ready"), data
    said = data["message"] + "".join(mr["description"] for mr in mrs)
    assert ".pytest.ini" in said, said
    record = next((tmp_path / "workspace").rglob("acceptance/latest.json"))
    saved = json.loads(record.read_text())
    assert saved["passed"] is False and ".pytest.ini" in saved["checks_changed"], saved
    assert "pytest.py" in saved["checks_changed"] or runtime == "claude-code", saved
    # the harness's pytest ran (it only collected, as the agent's config says), never the fake
    [check] = saved["checks"]
    assert "5 passed in 0.01s" not in check["stdout_tail"], check
    assert "test_discount.py" in check["stdout_tail"], check
