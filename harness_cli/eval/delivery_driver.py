"""Run a delivery case of the eval library for real: the sandbox (Slack, GitLab with the
sample project and its real CI, Anthropic playing the case's script), a fresh home, workspace
and config, and the real subcommands with the inline dispatcher — `init`, `case new`,
`investigate`, `admin "task CASE --auto"` (which runs dev-agent), then `mr-monitor` cycles as
the flow needs (red CI → fix_ci, a reviewer's note → address_review, a concurrent push).

What is observed comes from GitLab's side (the MR, its notes, its pipelines, the branch on
the remote), Slack's (the operator's DMs) and the case folder (case.json, acceptance/)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness_cli.cli import run
from harness_cli.eval.cases import LibraryCase, Observed
from harness_cli.eval.suites import live_model_env, live_upstream
from harness_cli.eval.trial_home import copy_config, mark_trial, spent
from harness_cli.sandbox.runner import Sandbox, environment
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, SAMPLE_TICKET
from harness_cli.sandbox.wire_commands import from_emulator

CASE_ID = "AAA-201"
SELF_DM = "D0SELF"
REVIEWER = "alice"


def _cli(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return run(list(argv))


def run_delivery_case(
    case: LibraryCase,
    runtime: str,
    *,
    anthropic: Any = None,
    keep: Path | None = None,
    seed: int | None = None,
    ablate: frozenset[str] = frozenset(),
    config_root: Path | None = None,
) -> Observed:
    """One run of a delivery ``case`` (``anthropic`` is unused: the sandbox has its own)."""
    del anthropic
    assert case.delivery is not None
    root = Path(tempfile.mkdtemp(prefix=f"harness-eval-{case.id}-", dir=keep))
    try:
        with Sandbox(root / "sandbox") as box:
            if not case.live:
                box.anthropic.load_script(case.model_source(), case.variables or None, seed)

                box.anthropic.play_live(live_upstream(case))  # models: {ROLE: live}
            config = copy_config(root, case, config_root)
            if case.delivery.required_checks is not None:
                _set_checks(config, case.delivery.required_checks)
            home = root / "home"
            mark_trial(home, ablate, seed)
            (root / "user").mkdir()
            gitconfig = root / "gitconfig"
            gitconfig.write_text("[user]\n\tname = Harness Eval\n\temail = eval@example.invalid\n")
            env = {
                "GIT_CONFIG_GLOBAL": str(gitconfig),
                "GIT_CONFIG_NOSYSTEM": "1",
                **box.env(),
                "HARNESS_HOME": str(home),
                "HARNESS_WORKSPACE": str(root / "workspace"),
                "HARNESS_CONFIG": str(config),
                "HARNESS_DISPATCH": "inline",
                "HARNESS_WORKTREES": str(root / "worktrees"),
                "HARNESS_RUNTIME": runtime,
                "HOME": str(root / "user"),
                "CLAUDE_CODE_MAX_RETRIES": "1",
                **{k: v for k, v in case.setup.env.items() if v is not None},
            }
            if case.live:  # the real API plays every role
                env.update(live_model_env(case))
            with environment(env):
                code = _flow(case, box, root)
                seen = _observe(case, box, root, code)
            seen.usd, seen.tokens = spent(home)
            return seen
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def _set_checks(config: Path, checks: list[str]) -> None:
    path = config / "projects.yaml"
    data = yaml.safe_load(path.read_text())
    data["projects"]["team-a"]["required_checks"] = checks
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _flow(case: LibraryCase, box: Sandbox, root: Path) -> int:
    assert case.delivery is not None
    flow = case.delivery.flow
    ticket = root / "ticket.txt"
    ticket.write_text(f"{case.setup.ticket or SAMPLE_TICKET} ({CASE_ID})\n", encoding="utf-8")
    steps = [
        ("init",),
        ("case", "new", "--project", "team-a", "--id", CASE_ID, "--title",
         f"{CASE_ID}: {case.id}", "--text", str(ticket)),
        ("investigate", CASE_ID),
        ("admin", f"task {CASE_ID} --auto"),
    ]  # fmt: skip
    code = 0
    for argv in steps:
        code = _cli(*argv)
        if code != 0:
            return code
    box.gitlab.wait_for_pipelines(timeout=120)
    if flow == "task":
        return code
    if flow in ("fix_ci", "address_review", "conflict"):
        code = _cli("mr-monitor")  # a red pipeline → fix_ci
        box.gitlab.wait_for_pipelines(timeout=120)
    if flow == "conflict":
        _concurrent_push(box)
    if flow in ("address_review", "conflict"):
        iid = _mr(box).get("iid")
        if iid is not None:
            box.gitlab.control("add_note", {"project": SAMPLE_PROJECT_PATH, "iid": iid,
                               "author": REVIEWER, "discussion": True,
                               "body": case.delivery.review_note})  # fmt: skip
            code = _cli("mr-monitor")
            box.gitlab.wait_for_pipelines(timeout=120)
    return code


def _concurrent_push(box: Sandbox) -> None:
    """A teammate pushes to the MR's branch: the next push of the harness must take their
    commit in (L1 rebases over it), never drop it."""
    branch = _mr(box).get("source_branch")
    if branch:
        box.gitlab.control("commit", {"project": SAMPLE_PROJECT_PATH, "branch": branch,
                           "files": {"NOTES.md": "TEAMMATE-NOTE: checked with finance\n"},
                           "message": "Note the finance check", "author": REVIEWER})  # fmt: skip


def _mr(box: Sandbox) -> dict[str, Any]:
    mrs = [
        m for m in box.gitlab.snapshot()["merge_requests"] if m["project"] == SAMPLE_PROJECT_PATH
    ]
    return mrs[-1] if mrs else {}


def _observe(case: LibraryCase, box: Sandbox, root: Path, code: int) -> Observed:
    folder = root / "workspace" / "case-workspaces" / CASE_ID
    try:
        status = str(json.loads((folder / "case.json").read_text())["status"])
    except (OSError, ValueError, KeyError):
        status = ""
    mr = _mr(box)
    snapshot = box.gitlab.snapshot()
    pipelines = [p["status"] for p in snapshot["pipelines"] if p["project"] == SAMPLE_PROJECT_PATH
                 and (not mr or p["ref"] == mr.get("source_branch"))]  # fmt: skip
    bare = next(p["bare_repo"] for p in snapshot["projects"] if p["path"] == SAMPLE_PROJECT_PATH)
    branch = str(mr.get("source_branch") or "")
    text, changed = _branch(Path(bare), branch) if branch else ("", [])
    delivery = {
        "mr_state": mr.get("state"),
        "draft": str(mr.get("title", "")).lower().startswith(("draft:", "[draft]", "wip:")),
        "acceptance": _acceptance(folder),
        "replies": [
            n["body"] for n in mr.get("notes", []) if n["author"] != REVIEWER and not n["system"]
        ],
        "pushed": bool(branch) and bool(text),
        "branch_text": text,
        "changed_files": changed,
        "pipelines": pipelines,
    }
    dms = [str(m.get("text", "")) for m in box.slack.messages(SELF_DM)]
    ran = [{"command": c.command, "fate": c.fate, "said": c.said}
           for c in from_emulator(box.anthropic)]  # fmt: skip
    return Observed(
        runtime="", exit=None, exit_code=code, exit_line="", iterations=0, status=status,
        dm=dms, unmatched=[str(u.get("unmatched")) for u in box.anthropic.unmatched()],
        delivery=delivery, commands=ran,
    )  # fmt: skip


def _acceptance(folder: Path) -> str | None:
    records = sorted((folder / "acceptance").glob("*.json")) if folder.is_dir() else []
    for path in reversed(records):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text())
            if "passed" in data:
                return "pass" if data["passed"] else "fail"
    return None


def _branch(bare: Path, branch: str) -> tuple[str, list[str]]:
    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(bare), *args], capture_output=True, text=True)
        return proc.stdout if proc.returncode == 0 else ""

    files = git("ls-tree", "-r", "--name-only", branch).split()
    text = "\n".join(git("show", f"{branch}:{f}") for f in files if f.endswith((".py", ".md")))
    base = git("merge-base", branch, "main").strip()
    changed = git("diff", "--name-only", base, branch).split() if base else []
    return text, changed
