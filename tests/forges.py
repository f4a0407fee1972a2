"""Both forges as a test sees them: the GitLab or the GitHub emulator with the sample project,
the harness pointed at it the way an operator points it (env, projects.yaml ``forge:``, the
token for git in the global git config), and what the team sees of its merge/pull requests in
one shape.

Tests parametrized with ``forge`` (``gitlab`` | ``github``) get a :class:`Side`; nothing here
plays a part of the harness: the real clients (python-gitlab, PyGithub) and real git talk to
the emulators.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.scenarios.sample_repo import (
    SAMPLE_CI_COMMAND,
    SAMPLE_PROJECT_PATH,
    sample_project_files,
    seed_sample_project,
)

REPO = Path(__file__).resolve().parents[1]
GITHUB_TOKEN = "ghp_forgeTestsForgeTests0000000000000000"
FORGES = ["gitlab", "github"]


class Side:
    """One forge with the sample project, as the team sees it."""

    name: str
    emu: Any

    def mrs(self) -> list[dict[str, Any]]:
        """Each MR/PR: ``iid``, ``title`` (``Draft: `` first while it is a draft, as GitLab
        shows it), ``description``, ``sha``, ``notes`` (``author``, ``body``, no system
        notes)."""
        raise NotImplementedError

    def creates(self) -> int:
        """Requests that created an MR/PR."""
        raise NotImplementedError

    def force_ci(self, status: str) -> None:
        """The next pipeline / workflow run ends ``success`` or ``failed``."""
        raise NotImplementedError

    def wait_ci(self, timeout: float = 120) -> None:
        raise NotImplementedError

    def note(self, iid: int, body: str, *, author: str = "alice") -> str:
        """A reviewer's comment on a line of the change (a thread); its discussion id."""
        raise NotImplementedError


class GitLabSide(Side):
    name = "gitlab"

    def __init__(self, emu: GitLabEmulator) -> None:
        self.emu = emu

    def mrs(self) -> list[dict[str, Any]]:
        return [
            {**m, "notes": [n for n in m.get("notes", []) if not n.get("system")]}
            for m in self.emu.snapshot()["merge_requests"]
        ]

    def creates(self) -> int:
        return len(self.emu.recorded("/merge_requests", method="POST"))

    def force_ci(self, status: str) -> None:
        self.emu.control("set_pipeline_result", {"project": SAMPLE_PROJECT_PATH, "status": status})

    def wait_ci(self, timeout: float = 120) -> None:
        self.emu.wait_for_pipelines(timeout)

    def note(self, iid: int, body: str, *, author: str = "alice") -> str:
        args = {"project": SAMPLE_PROJECT_PATH, "iid": iid, "author": author, "body": body}
        return str(self.emu.control("add_note", args)["discussion_id"])


class GitHubSide(Side):
    name = "github"

    def __init__(self, emu: Any) -> None:
        self.emu = emu

    def mrs(self) -> list[dict[str, Any]]:
        found = []
        for pr in self.emu.snapshot()["pulls"]:
            notes = list(pr["issue_comments"])
            for thread in pr["threads"]:
                notes += thread["comments"]
            found.append(
                {
                    "iid": pr["number"],
                    "title": ("Draft: " if pr["draft"] else "") + pr["title"],
                    "description": pr["body"] or "",
                    "sha": pr["head_sha"],
                    "state": pr["state"],
                    "merged": pr["merged"],
                    "notes": notes,
                }
            )
        return found

    def creates(self) -> int:
        return len(
            [r for r in self.emu.recorded("/pulls", method="POST") if r.path.endswith("/pulls")]
        )

    def force_ci(self, status: str) -> None:
        conclusion = {"failed": "failure"}.get(status, status)
        self.emu.control("set_ci_result", {"repo": SAMPLE_PROJECT_PATH, "conclusion": conclusion})

    def wait_ci(self, timeout: float = 120) -> None:
        self.emu.wait_for_runs(timeout)

    def note(self, iid: int, body: str, *, author: str = "alice") -> str:
        made = self.emu.control(
            "add_review_comment",
            {"repo": SAMPLE_PROJECT_PATH, "number": iid, "body": body, "author": author,
             "path": "pricing/discount.py", "line": 1},
        )  # fmt: skip
        return str(made["comment_id"])


def use_github(
    emu: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    config: Path | None = None,
    token: str = GITHUB_TOKEN,
    projects: bool = True,
) -> None:
    """Point the harness at the GitHub emulator as an operator would: GITHUB_URL/TOKEN, the
    projects on ``forge: github``, and git authenticated by the global git config (the
    harness never puts a token on a git command line)."""
    emu.control("add_token", {"token": token})
    monkeypatch.setenv("GITHUB_URL", emu.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", token)
    gitconfig = Path(os.environ["GIT_CONFIG_GLOBAL"])
    with gitconfig.open("a") as handle:
        handle.write(f'[http "{emu.url}/"]\n\textraHeader = Authorization: Bearer {token}\n')
    target = config or tmp_path / "agent-config"
    if not target.exists():
        shutil.copytree(REPO / "agent-config", target)
    if projects:
        on_github(target)


def on_github(config: Path) -> None:
    """Every project of ``config``'s projects.yaml on ``forge: github``."""
    import yaml

    path = config / "projects.yaml"
    data = yaml.safe_load(path.read_text())
    for project in data["projects"].values():
        project["forge"] = "github"
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def seed_github(emu: Any, files: dict[str, str] | None = None) -> dict[str, Any]:
    made: dict[str, Any] = emu.control(
        "create_repo",
        {
            "repo": SAMPLE_PROJECT_PATH,
            "files": files or sample_project_files(),
            "ci_command": SAMPLE_CI_COMMAND,
        },
    )
    return made


def start(forge: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Side]:
    """The emulator of ``forge`` with the sample project, the harness pointed at it."""
    if forge == "gitlab":
        gl = GitLabEmulator(tmp_path / "gitlab", ci_timeout=60, watch_interval=0.2)
        gl.start()
        try:
            seed_sample_project(gl)
            monkeypatch.setenv("GITLAB_URL", gl.url)
            monkeypatch.setenv("GITLAB_TOKEN", "glpat-harness-bot")
            yield GitLabSide(gl)
        finally:
            gl.stop()
        return
    from harness_cli.sandbox.github_api import GitHubEmulator

    gh = GitHubEmulator(tmp_path / "github", ci_timeout=60)
    gh.start()
    try:
        seed_github(gh)
        use_github(gh, tmp_path, monkeypatch)
        yield GitHubSide(gh)
    finally:
        gh.stop()
