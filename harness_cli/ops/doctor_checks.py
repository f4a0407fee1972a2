"""The operations half of ``harness doctor``: git identity, the workspace remote, the schedule
(cron or systemd) and the MCP servers. Each check names the fix of what it finds wrong.

``LOCAL_CHECKS`` is the list of machine checks that need no network: a new one is a function
returning a ``Check`` (or a list of them), appended there."""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_cli import paths
from harness_cli.doctor import Check
from harness_cli.errors import HarnessError

REMOTE_TIMEOUT_S = 20.0


def local_checks() -> list[Check]:
    """Every function of ``LOCAL_CHECKS``, in order."""
    out: list[Check] = []
    for check in LOCAL_CHECKS:
        found = check()
        out += found if isinstance(found, list) else [found]
    return out


def git_identity() -> Check:
    """Who the workspace commits are by. Without one they fall back to a generic identity, so
    a second machine's commits cannot be told apart."""
    found = {}
    for key in ("user.name", "user.email"):
        proc = subprocess.run(
            ["git", "config", "--get", key], capture_output=True, text=True, check=False
        )
        found[key] = proc.stdout.strip()
    if all(found.values()):
        return Check("git identity", "ok", f"{found['user.name']} <{found['user.email']}>")
    missing = " and ".join(k for k, v in found.items() if not v)
    return Check(
        "git identity",
        "warn",
        f"{missing} not set: workspace commits use the harness's fallback identity",
        'git config --global user.name "…" && git config --global user.email "…"',
    )


def workspace_remote() -> Check | None:
    """``git ls-remote`` against the workspace's remote: cases reach other machines only if
    this answers. None when there is no workspace repo or no remote (``_workspace`` says so)."""
    ws = paths.workspace()
    if not (ws / ".git").exists():
        return None
    remotes = subprocess.run(
        ["git", "-C", str(ws), "remote"], capture_output=True, text=True, check=False
    ).stdout.split()
    if not remotes:
        return None
    url = subprocess.run(
        ["git", "-C", str(ws), "remote", "get-url", remotes[0]],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    if urllib.parse.urlsplit(url).password:  # #28 R9: git puts it on its helpers' argv
        return Check(
            "workspace remote",
            "fail",
            f"{remotes[0]}'s URL carries a credential: every git push shows it in the process list",
            f"git -C {ws} remote set-url {remotes[0]} <the URL without user:token@>, and give "
            "git the token through a credential helper or use an SSH URL",
        )
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"}
    try:
        proc = subprocess.run(
            ["git", "-C", str(ws), "ls-remote", "--heads", remotes[0]],
            capture_output=True,
            text=True,
            check=False,
            timeout=REMOTE_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return Check(
            "workspace remote",
            "fail",
            f"`git ls-remote {remotes[0]}` gave no answer in {REMOTE_TIMEOUT_S:g} s",
            "check the network and the remote's URL (git -C <workspace> remote -v)",
        )
    if proc.returncode != 0:
        from harness_cli.logs import redact

        return Check(
            "workspace remote",
            "fail",
            redact(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "failed"),
            "check the remote's URL and this machine's access to it (ssh key or token)",
        )
    return Check("workspace remote", "ok", f"{remotes[0]} answers")


def expected_paths() -> dict[str, Path]:
    """The HARNESS_* paths this doctor runs with: what a scheduled run must carry too."""
    return {
        "HARNESS_HOME": paths.home(),
        "HARNESS_CONFIG": paths.config_dir(),
        "HARNESS_WORKSPACE": paths.workspace(),
        "HARNESS_ENV_FILE": paths.env_file(),
    }


def _mismatches(found: dict[str, str], where: str) -> list[str]:
    """Each HARNESS_* path the schedule runs with that differs from this run's (or is absent):
    a cron line without HARNESS_WORKSPACE writes its cases somewhere nobody looks."""
    problems = []
    for key, mine in expected_paths().items():
        theirs = found.get(key)
        if not theirs:
            problems.append(f"{where} sets no {key} (this run: {mine.resolve()})")
        elif Path(theirs).resolve() != mine.resolve():
            problems.append(f"{where} has {key}={theirs}, this run has {mine.resolve()}")
    return problems


def scheduled() -> bool:
    """A crontab block or a harness unit is installed (so the env file must hold the tokens)."""
    from harness_cli.ops import schedule as cron

    try:
        crontab = cron.current() or ""
    except HarnessError:
        crontab = ""
    return bool(cron.block_of(crontab)) or bool(_installed_units())


def _installed_units() -> list[Path]:
    from harness_cli.ops import schedule as cron

    return [cron.systemd_dir() / n for n in cron.UNITS if (cron.systemd_dir() / n).is_file()]


def schedule() -> list[Check]:
    """Something runs the periodic subcommands (the crontab block, or the systemd timer), and
    what it runs exists and carries this run's paths."""
    from harness_cli.ops import schedule as cron

    fix = "re-run `harness init --install-cron --yes` with the HARNESS_* this shell uses"
    try:
        crontab = cron.current()
    except HarnessError as exc:
        crontab, problem = None, exc.message
    else:
        problem = ""
    block = cron.block_of(crontab or "")
    out: list[Check] = []
    if block:
        jobs = cron.entries(block)
        env = cron.assignments(block)
        problems = _mismatches(env, "the crontab")
        binary = env.get("HARNESS_BIN", "")
        if not (binary.startswith("/") and os.access(binary, os.X_OK)):
            problems.insert(0, f"the crontab's HARNESS_BIN {binary or '(unset)'} is not executable")
        wrappers = {e.argv[0] for e in jobs if e.argv}
        gone = [w for w in wrappers if not os.access(w, os.X_OK)]
        if gone:
            problems.insert(0, f"the crontab runs {', '.join(gone)}, which is gone")
        if problems:
            out.append(Check("schedule", "fail", "; ".join(problems), fix))
        else:
            out.append(Check("schedule", "ok", f"crontab: {len(jobs)} harness job(s)"))
    out += _units()
    if out:
        return out
    if _systemd_timer():
        return [Check("schedule", "ok", "systemd: harness-poll-slack.timer enabled")]
    detail = "no harness block in the crontab and no harness timer"
    if crontab is None:
        detail = problem or "no crontab command and no harness timer"
    return [
        Check(
            "schedule",
            "warn",
            detail + ": nothing polls Slack or watches the MRs",
            "`harness init --install-cron` prints the crontab; add --yes to install it",
        )
    ]


def _units() -> list[Check]:
    """Each installed harness unit starts an existing harness with this run's paths."""
    import shlex

    out = []
    for unit in _installed_units():
        if unit.suffix != ".service":
            continue
        env: dict[str, str] = {}
        argv: list[str] = []
        env_file = ""
        for raw in unit.read_text(encoding="utf-8").splitlines():
            key, _, value = raw.partition("=")
            if key == "Environment":
                name, _, val = (shlex.split(value) or [""])[0].partition("=")
                env[name] = val
            elif key == "EnvironmentFile":
                env_file = value.removeprefix("-")
            elif key == "ExecStart":
                argv = shlex.split(value)
        env["HARNESS_ENV_FILE"] = env_file
        problems = _mismatches(env, unit.name)
        if not argv or not os.access(argv[0], os.X_OK):
            problems.insert(0, f"{unit.name} starts {argv[0] if argv else '(nothing)'}: not found")
        fix = "re-run `harness init --install-systemd --yes`, then systemctl --user daemon-reload"
        name = f"unit {unit.name}"
        out.append(
            Check(name, "fail", "; ".join(problems), fix)
            if problems
            else Check(name, "ok", f"{unit} runs {argv[0]}")
        )
    return out


def _systemd_timer() -> bool:
    exe = shutil.which("systemctl")
    if exe is None:
        return False
    try:
        proc = subprocess.run(
            [exe, "--user", "is-enabled", "harness-poll-slack.timer"],
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        )
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0


def mcp_servers() -> list[Check]:
    """Each server of mcp.json gets the check mcp-watch makes (read-only: no state, no DM).
    Nothing when the config does not load (the config check already says why)."""
    from harness_cli.config import load_config
    from harness_cli.ops.mcp_probe import probe_all
    from harness_cli.ops.mcp_watch import fix_for

    try:
        cfg = load_config()
    except HarnessError:
        return []
    servers = cfg.mcp.mcpServers
    if not servers:
        return [Check("MCP servers", "ok", "none configured")]
    found = probe_all(dict(servers))
    return [
        Check(f"MCP {name}", "ok", f"{probe.line()}; {tool_effects(name, probe, cfg.harness.mcp)}")
        if probe.ok
        else Check(f"MCP {name}", "fail", probe.line(), fix_for(name, servers[name], None))
        for name, probe in found.items()
    ]


def tool_effects(server: str, probe: Any, settings: Any) -> str:
    """Each tool with the effect its contract gives it (``agents.mcp_contracts``), grouped:
    ``read-only: search_logs, list_services; writes (untrusted): add_comment``."""
    from harness_cli.agents.mcp_contracts import effect_of

    groups: dict[str, list[str]] = {}
    for tool in probe.tools:
        policy = effect_of(server, tool, probe.annotations.get(tool), settings)
        label = "denied (Slack write)" if policy.denied else f"{policy.effect} ({policy.why})"
        groups.setdefault(label, []).append(tool)
    return (
        "; ".join(f"{label}: {', '.join(names)}" for label, names in groups.items()) or "no tools"
    )


def agent_sandbox() -> Check:
    """The box the agents' commands run in works on this machine (bubblewrap, and socat for
    the claude CLI's network proxy): without it no dev-agent runs, unless harness.yaml opts out."""
    from harness_cli.agents import sandbox
    from harness_cli.agents.factory import runtime_name
    from harness_cli.config import load_config

    try:
        cfg = load_config()
        runtime, required = runtime_name(cfg.harness.runtime), cfg.harness.sandbox.required
    except HarnessError:
        runtime, required = runtime_name(), True
    found = sandbox.problem(runtime)
    if found is None:
        return Check("agent sandbox", "ok", f"bubblewrap works ({runtime})")
    if not required:
        return Check(
            "agent sandbox",
            "warn",
            f"{found}: agent commands run UNSANDBOXED (sandbox.required: false)",
            "apt-get install bubblewrap socat, then remove sandbox.required: false",
        )
    return Check(
        "agent sandbox",
        "fail",
        f"{found}: no dev-agent, push heal or patch run can start",
        "apt-get install bubblewrap socat (or set sandbox.required: false in harness.yaml)",
    )


def agent_limits() -> list[Check]:
    """The box's limits (processes, memory, CPU time, file size) can be applied on this
    machine for the configured runtime (#28 R11): one line each, with the fix."""
    from harness_cli.agents import limits
    from harness_cli.agents.factory import runtime_name
    from harness_cli.config import load_config

    try:
        cfg = load_config()
        runtime, settings = runtime_name(cfg.harness.runtime), cfg.harness.sandbox.limits
    except HarnessError:
        runtime, settings = runtime_name(), limits.LimitSettings()
    return [Check(f.name, f.status, f.detail, f.fix) for f in limits.diagnose(settings, runtime)]


LOCAL_CHECKS: list[Callable[[], Check | list[Check]]] = [
    git_identity,
    schedule,
    agent_sandbox,
    agent_limits,
]
"""The machine's offline checks, in the order ``harness doctor`` prints them."""
