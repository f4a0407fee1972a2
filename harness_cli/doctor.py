"""The checks behind ``harness doctor``. Each says what it found and, when something is wrong,
the fix. No check ever prints a token's value."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from harness_cli import paths
from harness_cli.errors import HarnessError


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


def run_checks(*, offline: bool = False) -> list[Check]:
    """Machine, config and files first; with the network: tokens accepted, the workspace
    remote, the MCP servers. Each problem appears once (a check that depends on a failed one
    is left out rather than failing again)."""
    from harness_cli.ops import doctor_checks as ops

    checks = [_home(), _git(), ops.git_identity(), *_config_and_runtime(), _workspace()]
    checks += [*_state_files(), *_tokens(), ops.schedule()]
    if not offline:
        checks += [_reach(name, probe) for name, probe in _probes()]
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


def _config_and_runtime() -> list[Check]:
    from harness_cli.config import load_config
    from harness_cli.services.claude_cli import PINNED_VERSION, find_claude

    try:
        cfg = load_config()
    except HarnessError as exc:
        return [Check("config", "fail", exc.line(), "fix the file named above")]
    names = ", ".join(cfg.projects.projects)
    checks = [Check("config", "ok", f"{cfg.dir} (projects: {names})")]
    runtime = os.environ.get("HARNESS_RUNTIME") or cfg.harness.runtime
    if runtime == "claude-code":
        claude = find_claude()
        if claude is None:
            checks.append(
                Check(
                    "claude CLI",
                    "fail",
                    "not found",
                    f"run `make claude-cli` (pins {PINNED_VERSION}) or set HARNESS_CLAUDE_BIN",
                )
            )
        else:
            out = subprocess.run(
                [str(claude), "--version"], capture_output=True, text=True, check=False, timeout=30
            )
            version = out.stdout.strip()
            if out.returncode != 0 or not version:
                checks.append(
                    Check(
                        "claude CLI",
                        "fail",
                        f"{claude} --version exited {out.returncode}",
                        f"reinstall it: `make claude-cli` (pins {PINNED_VERSION})",
                    )
                )
            elif PINNED_VERSION not in version:
                checks.append(
                    Check(
                        "claude CLI",
                        "warn",
                        f"{claude} is {version}; the harness is tested with {PINNED_VERSION}",
                        f"`make claude-cli` installs {PINNED_VERSION} under .tools/",
                    )
                )
            else:
                checks.append(Check("claude CLI", "ok", f"{claude} {version}"))
    return checks


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
    from harness_cli.state import files

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


def _tokens() -> list[Check]:
    wanted = {
        "SLACK_USER_TOKEN": "reads the support channels and the self-DM",
        "GITLAB_TOKEN": "opens and watches MRs",
        "ANTHROPIC_API_KEY": "the model (the claude CLI reads it too)",
    }
    out = []
    for var, why in wanted.items():
        if os.environ.get(var):
            out.append(Check(var, "ok", "set"))
        else:
            out.append(Check(var, "warn", f"not set ({why})", f"export {var}=…"))
    return out


def _probes() -> list[tuple[str, Callable[[], str]]]:
    probes: list[tuple[str, Callable[[], str]]] = []
    if os.environ.get("SLACK_USER_TOKEN"):
        probes.append(("Slack", _probe_slack))
    if os.environ.get("GITLAB_TOKEN"):
        probes.append(("GitLab", _probe_gitlab))
    if os.environ.get("ANTHROPIC_API_KEY"):
        probes.append(("Anthropic", _probe_anthropic))
    return probes


def _probe_slack() -> str:
    from slack_sdk import WebClient

    client = WebClient(
        token=os.environ["SLACK_USER_TOKEN"],
        timeout=5,
        base_url=os.environ.get("SLACK_API_URL", "https://slack.com/api/"),
    )
    reply = client.auth_test()
    return f"as {reply.get('user')} ({reply.get('user_id')})"


def _probe_gitlab() -> str:
    import gitlab

    gl = gitlab.Gitlab(
        os.environ.get("GITLAB_URL", "https://gitlab.com"),
        private_token=os.environ["GITLAB_TOKEN"],
        timeout=5,
    )
    gl.auth()  # GET /user: proves the token is accepted, not only that the host answers
    user = gl.user
    return f"as {getattr(user, 'username', '?')}"


def _probe_anthropic() -> str:
    import json
    import urllib.request

    # The SDK costs ~2.5 s to import; a models listing over urllib proves the same thing.
    base = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/")
    req = urllib.request.Request(
        f"{base}/v1/models",
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        models = json.loads(resp.read()).get("data", [])
    return f"{len(models)} model(s) listed"


def _reach(name: str, probe: Callable[[], str]) -> Check:
    from harness_cli.logs import redact

    try:
        return Check(f"reach {name}", "ok", probe())
    except Exception as exc:  # noqa: BLE001 - any failure of a probe is the finding itself
        return Check(
            f"reach {name}",
            "fail",
            redact(f"{type(exc).__name__}: {exc}")[:200],
            _REACH_FIX.get(name, "check the URL, the token and the network"),
        )


_REACH_FIX = {
    "Slack": "auth.test refused: check SLACK_USER_TOKEN (a user token, xoxp-…) and SLACK_API_URL",
    "GitLab": "GET /user refused: check GITLAB_TOKEN (scope api) and GITLAB_URL",
    "Anthropic": "the models call refused: check ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL",
}
