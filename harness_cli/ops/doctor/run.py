"""The checks behind ``harness doctor``. Each says what it found and, when something is wrong,
the fix. No check ever prints a token's value."""

from __future__ import annotations

import os
import shutil
import subprocess

from harness_cli import paths
from harness_cli.errors import HarnessError
from harness_cli.ops.doctor import checks as ops
from harness_cli.ops.doctor import install, services
from harness_cli.ops.doctor.check import Check
from harness_cli.state import files


def run_checks(*, offline: bool = False) -> list[Check]:
    """Machine, config, files and tokens first; with the network: who the tokens are, the
    channels and repos of the config, the model, the workspace remote, the MCP servers. Each
    problem appears once (a check that depends on a failed one is left out rather than failing
    again)."""

    cfg, config = install.load()
    checks = [_home(), _git(), config, *install.stray_config()]
    if cfg is not None:
        checks += [install.templates(cfg), install.sops(cfg), install.claude_cli(cfg)]
    checks += [_workspace(), *_state_files()]
    env = install.environment()
    scheduled = ops.scheduled()
    checks += [install.env_file(scheduled), *install.tokens(cfg, env, scheduled)]
    checks += ops.local_checks()
    if not offline:
        checks += services.slack(cfg, env) + services.gitlab(cfg, env)
        checks += services.github(cfg, env) + services.model(cfg, env)
        checks += services.jira(cfg, env)
        remote = ops.workspace_remote()
        checks += [remote] if remote else []
        checks += ops.mcp_servers()
    return checks


def _home() -> Check:
    home = paths.home()
    if not home.is_dir():
        return Check("harness home", "fail", f"{home} does not exist", "run `harness init`")
    if not os.access(home, os.W_OK):
        return Check("harness home", "fail", f"{home} is not writable", "fix its permissions")
    return Check("harness home", "ok", str(home))


def _git() -> Check:
    exe = shutil.which("git")
    if not exe:
        return Check("git", "fail", "git not found on PATH", "install git (apt-get install git)")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return Check("git", "ok", out.stdout.strip())


def _workspace() -> Check:
    ws = paths.workspace()
    if not (ws / ".git").exists():
        return Check("workspace", "fail", f"{ws} is not a git repo", "run `harness init`")
    remote = subprocess.run(
        ["git", "-C", str(ws), "remote"], capture_output=True, text=True, check=False
    ).stdout.split()
    if not remote:
        return Check(
            "workspace",
            "warn",
            f"{ws} has no remote: cases live on this machine only",
            "git -C <workspace> remote add origin <url>",
        )
    return Check("workspace", "ok", f"{ws} (remote {remote[0]})")


def _state_files() -> list[Check]:
    out: list[Check] = []
    for handle in (
        files.task_thread_map(),
        files.oncall_thread_map(),
        files.monitored_mrs(),
        files.patch_pr_state(),
        files.oncall_state(),
        files.slack_cursors(),
        files.socket_dedup(),
    ):
        if not handle.path.exists():
            continue
        try:
            handle.read()
        except HarnessError as exc:
            out.append(Check(f"state {handle.path.name}", "fail", exc.message, exc.hint or ""))
        if handle.stood_in:  # the kill switch fails closed instead of raising
            detail = f"unreadable ({handle.stood_in}): the harness holds itself paused"
            out.append(Check(f"state {handle.path.name}", "fail", detail, "`harness resume`"))
    return out or [Check("state files", "ok", "readable")]
