"""``--dry-run``, one way for every subcommand that writes outward: the command runs for real
against a throwaway copy of this machine's state, and nothing it would send leaves.

- ``$HARNESS_HOME`` (its JSON state) and the workspace are copied to a temp dir (the workspace
  as a ``git clone --shared`` whose pushes go to a scratch bare repo), with the absolute case
  paths in the copies pointed at the copy; dispatch is ``record``.
- Slack, GitLab and Jira writes are recorded instead of sent (reads go through: the decisions are
  made on what the services really say).
- The first model call stops the run (``Stopped``): a dry run spends no tokens; what the
  workflow checked and decided before it is reported, with the role it would have called.

The real ``$HARNESS_HOME`` and workspace are never written; the copies are deleted after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli import paths

SKIP_HOME = ("logs", "payloads", "locks", "workspace")
_ENV = (
    "HARNESS_HOME",
    "HARNESS_WORKSPACE",
    "HARNESS_WORKTREES",
    "HARNESS_CONFIG",
    "HARNESS_DISPATCH",
)


class Stopped(BaseException):
    """Raised at the first model call. A BaseException, so that no workflow's error handling
    turns it into a failure it would then report (to a copy, but still misleading)."""

    def __init__(self, role: str) -> None:
        super().__init__(role)
        self.role = role


@dataclass
class Plan:
    """What the command would have done outside this machine."""

    actions: list[str] = field(default_factory=list)
    stopped_at: str | None = None

    def add(self, text: str) -> None:
        self.actions.append(" ".join(text.split())[:300])


ACTIVE: Plan | None = None
"""Set while a dry run is in progress: the service factory and the runtime factory read it."""


@contextmanager
def shadow() -> Iterator[Plan]:
    """Run the body against copies of HARNESS_HOME and the workspace; yield what it would send."""
    global ACTIVE

    plan = Plan()
    root = Path(tempfile.mkdtemp(prefix="harness-dry-run-"))
    saved = {k: os.environ.get(k) for k in _ENV}
    real_home, real_ws = paths.home(), paths.workspace()
    home, ws, sink = root / "home", root / "workspace", root / "sink.git"
    try:
        _copy_home(real_home, home, real_ws, ws)
        _copy_workspace(real_ws, ws, sink)
        env: dict[str, str] = {
            "HARNESS_HOME": str(home),
            "HARNESS_WORKSPACE": str(ws),
            "HARNESS_WORKTREES": str(root / "worktrees"),
            "HARNESS_CONFIG": str(paths.config_dir().absolute()),
            "HARNESS_DISPATCH": "record",
        }
        os.environ.update(env)
        ACTIVE = plan
        yield plan
    finally:
        ACTIVE = None
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        _collect(plan, home, sink)
        shutil.rmtree(root, ignore_errors=True)


def _copy_home(real: Path, home: Path, real_ws: Path, ws: Path) -> None:
    home.mkdir(parents=True)
    for sub in ("logs", "payloads", "locks"):
        (home / sub).mkdir()
    if not real.is_dir():
        return
    for entry in real.iterdir():
        if entry.name in SKIP_HOME or entry.is_symlink():
            continue
        target = home / entry.name
        if entry.is_dir():
            shutil.copytree(entry, target, symlinks=True)
        elif entry.suffix == ".json":
            # thread maps name case folders by absolute path: point them at the copy
            text = entry.read_text(encoding="utf-8").replace(str(real_ws), str(ws))
            target.write_text(text, encoding="utf-8")
        else:
            shutil.copy2(entry, target)


def _copy_workspace(real: Path, ws: Path, sink: Path) -> None:
    if not (real / ".git").exists():
        if real.is_dir():
            shutil.copytree(real, ws, symlinks=True)
        return
    run = _git
    run("clone", "-q", "--shared", "--no-checkout", str(real), str(ws))
    branch = run("-C", str(real), "symbolic-ref", "--short", "-q", "HEAD", check=False)
    if branch:
        run("-C", str(ws), "checkout", "-q", branch)
    # uncommitted files of the real workspace are part of what the run would see
    for path in run("-C", str(real), "ls-files", "--others", "--modified").splitlines():
        source = real / path
        if source.is_file():
            (ws / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, ws / path)
    run("init", "-q", "--bare", str(sink))
    origin = run("-C", str(real), "remote", "get-url", "origin", check=False)
    run("-C", str(ws), "remote", "set-url", "origin", origin or str(sink))
    run("-C", str(ws), "remote", "set-url", "--push", "origin", str(sink))


def _collect(plan: Plan, home: Path, sink: Path) -> None:
    for payload in sorted((home / "payloads").glob("*.json")):
        try:
            data = json.loads(payload.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        trigger = (data.get("trigger") or {}).get("kind", "?")
        mode = (data.get("args") or {}).get("mode")
        what = f"{data.get('workflow')}{f' --mode {mode}' if mode else ''}"
        plan.add(f"would start {what} on {data.get('case_id')} (trigger: {trigger})")
    if sink.is_dir():
        pushed = _git(
            "--git-dir", str(sink), "for-each-ref", "--format=%(refname:short)", check=False
        )
        for ref in pushed.splitlines():
            count = _git("--git-dir", str(sink), "rev-list", "--count", ref, check=False)
            plan.add(f"would push the workspace branch {ref} ({count} commits on it)")


def _git(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], capture_output=True, text=True, check=check, timeout=120)
    return proc.stdout.strip()


# -- the services while a dry run is active -------------------------------------------------


class RecordingSlack:
    """Reads go to Slack; posts, edits and reactions are written into the plan."""

    def __init__(self, inner: Any, plan: Plan) -> None:
        self._inner, self._plan, self._n = inner, plan, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def post(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        self._n += 1
        where = f"{channel} (thread {thread_ts})" if thread_ts else channel
        self._plan.add(f"would post to {where}: {text}")
        return f"9999999999.{self._n:06d}"

    def update(
        self, channel: str, ts: str, text: str, *, metadata: dict[str, Any] | None = None
    ) -> None:
        self._plan.add(f"would edit {channel}/{ts}: {text}")

    def react(self, channel: str, ts: str, name: str) -> None:
        self._plan.add(f"would react :{name}: on {channel}/{ts}")


class RecordingGitLab:
    """Reads go to GitLab; merge requests, notes, replies and resolutions go into the plan."""

    def __init__(self, inner: Any, plan: Plan) -> None:
        self._inner, self._plan = inner, plan

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create_mr(self, project: str, **fields: Any) -> Any:
        self._plan.add(f"would open an MR on {project}: {fields.get('title')}")
        raise Stopped("the MR")

    def update_mr(self, project: str, iid: int, **fields: Any) -> Any:
        self._plan.add(f"would update {project}!{iid}: {', '.join(sorted(fields))}")
        return self._inner.get_mr(project, iid)

    def reply(self, project: str, iid: int, discussion_id: str, body: str) -> None:
        self._plan.add(f"would reply on {project}!{iid}: {body}")

    def note(self, project: str, iid: int, body: str) -> None:
        self._plan.add(f"would comment on {project}!{iid}: {body}")

    def resolve(self, project: str, iid: int, discussion_id: str) -> None:
        self._plan.add(f"would resolve a thread on {project}!{iid}")

    def cancel_pipeline(self, project: str, pipeline: int) -> None:
        self._plan.add(f"would cancel pipeline {pipeline} of {project}")

    def create_pipeline(self, project: str, ref: str, variables: dict[str, str]) -> Any:
        self._plan.add(f"would start a pipeline of {project} on {ref}")
        raise Stopped("the pipeline")


class RecordingJira:
    """Reads go to Jira (the issue a ticket names is really read); comments, transitions and
    assignments go into the plan (#30)."""

    def __init__(self, inner: Any, plan: Plan) -> None:
        self._inner, self._plan = inner, plan

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def add_comment(self, key: str, body: str, properties: dict[str, Any]) -> str:
        self._plan.add(f"would comment on Jira {key}: {body}")
        return "dry-run"

    def transition(self, key: str, name: str) -> None:
        self._plan.add(f"would move Jira {key} to {name}")

    def assign(self, key: str, user: str) -> None:
        self._plan.add(f"would assign Jira {key} to {user}")


class StoppingRuntime:
    """The model runtime of a dry run: the first call ends the run."""

    name = "dry-run"

    def run(self, req: Any) -> Any:
        if ACTIVE is not None:
            ACTIVE.add(f"would call the model as {req.role} ({len(req.prompt):,} characters)")
        raise Stopped(str(req.role))
