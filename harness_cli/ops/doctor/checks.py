"""The operations half of ``harness doctor``: git identity, the workspace remote, the schedule
(cron or systemd) and the MCP servers. Each check names the fix of what it finds wrong.

``LOCAL_CHECKS`` is the list of machine checks that need no network: a new one is a function
returning a ``Check`` (or a list of them), appended there."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness_cli import paths
from harness_cli.agents import limits, sandbox
from harness_cli.agents.factory import runtime_name
from harness_cli.agents.mcp_contracts import effect_of
from harness_cli.agents.sandbox_settings import LimitSettings
from harness_cli.config import load_config
from harness_cli.delivery.identity import commit_identity
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.errors import HarnessError
from harness_cli.logs import redact
from harness_cli.ops import schedule as cron
from harness_cli.ops.doctor.check import Check
from harness_cli.ops.mcp_probe import probe_all
from harness_cli.ops.mcp_watch import fix_for

REMOTE_TIMEOUT_S = 20.0


def local_checks() -> list[Check]:
    """Every function of ``LOCAL_CHECKS``, in order."""
    out: list[Check] = []
    for check in LOCAL_CHECKS:
        found = check()
        out += found if isinstance(found, list) else [found]
    return out


def git_identity() -> Check:
    """Who the harness's commits on case branches are by (``delivery.identity``, the one rule):
    with no ``delivery.commit_author`` and no machine identity (or only a placeholder), every
    approved ticket fails at its first commit, so this fails here rather than at the ticket."""

    try:
        delivery, where = load_config().harness.delivery, paths.config_dir() / "harness.yaml"
    except HarnessError:  # the config check says why; the machine's identity still counts
        delivery, where = DeliveryThresholds(), paths.config_dir() / "harness.yaml"
    try:
        name, email = commit_identity(delivery)
    except HarnessError as exc:
        return Check(
            "git identity",
            "fail",
            f"{exc.message}: every approved ticket would fail at its first commit",
            f'set delivery.commit_author: "Your Name <you@team.example>" in {where}, or '
            'git config --global user.name "Your Name" && '
            'git config --global user.email "you@team.example"',
        )
    source = "delivery.commit_author" if delivery.commit_author.strip() else "git config"
    return Check("git identity", "ok", f"{name} <{email}> ({source})")


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

    try:
        crontab = cron.current() or ""
    except HarnessError:
        crontab = ""
    return bool(cron.block_of(crontab)) or bool(_installed_units())


def _installed_units() -> list[Path]:
    folder = cron.systemd_dir()
    return [folder / n for n in cron.unit_names() if (folder / n).is_file()]


def schedule() -> list[Check]:
    """Every periodic subcommand of the crontab is run by something enabled — its crontab line
    or its systemd timer (a unit file on disk that systemd was never told to start runs
    nothing) — and what runs it exists and carries this run's paths. The fix is one that
    works on this machine: the systemd path where there is no ``crontab`` command."""

    fix = "re-run `harness init --install-cron --yes` with the HARNESS_* this shell uses"
    try:
        crontab = cron.current()
    except HarnessError as exc:
        crontab, problem = None, exc.message
    else:
        problem = ""
    block = cron.block_of(crontab or "")
    out: list[Check] = []
    via_cron: set[str] = set()
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
            return [Check("schedule", "fail", "; ".join(problems), fix), *_units()]
        via_cron = {e.argv[1] for e in jobs if len(e.argv) > 1}
    out += _units()
    periodic = cron.jobs()
    timers = [j.timer for j in periodic if (cron.systemd_dir() / j.timer).is_file()]
    enabled = _enabled(timers)
    via_systemd = {j.name for j in periodic if j.timer in enabled}
    missing = [j.name for j in periodic if j.name not in via_cron | via_systemd]
    idle = [t for t in timers if t not in enabled]
    if not missing:
        how = [f"crontab: {', '.join(sorted(via_cron))}"] if via_cron else []
        how += [f"systemd timers: {', '.join(sorted(via_systemd))}"] if via_systemd else []
        return [Check("schedule", "ok", "; ".join(how)), *out]
    detail = f"nothing runs {', '.join(missing)}"
    if idle:
        detail += f" ({', '.join(idle)} installed but not enabled)"
    elif not block and not timers:
        detail = (problem or "no harness block in the crontab and no harness timer") + (
            ": nothing polls Slack or watches the MRs"
        )
    if crontab is not None:
        fix = "`harness init --install-cron` prints the crontab; add --yes to install it"
    elif idle:
        fix = cron.enable_command()
    else:  # no cron here: the systemd units are the schedule
        fix = f"harness init --install-systemd --yes && {cron.enable_command()}"
    return [Check("schedule", "warn", detail, fix), *out]


def _enabled(units: list[str]) -> set[str]:
    """The units ``systemctl --user is-enabled`` says are enabled (none without systemctl)."""
    exe = shutil.which("systemctl")
    if exe is None or not units:
        return set()
    found = set()
    for unit in units:
        try:
            proc = subprocess.run(
                [exe, "--user", "is-enabled", "--quiet", unit],
                capture_output=True,
                text=True,
                check=False,
                timeout=10,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            found.add(unit)
    return found


def listener_enabled() -> bool:
    """harness-listen.service is installed and enabled: only then does it need a token."""

    unit = "harness-listen.service"
    return (cron.systemd_dir() / unit).is_file() and unit in _enabled([unit])


def _units() -> list[Check]:
    """Each installed harness unit starts an existing harness with this run's paths."""

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


def mcp_servers() -> list[Check]:
    """Each server of mcp.json gets the check mcp-watch makes (read-only: no state, no DM).
    Nothing when the config does not load (the config check already says why)."""

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

    try:
        cfg = load_config()
        runtime, settings = runtime_name(cfg.harness.runtime), cfg.harness.sandbox.limits
    except HarnessError:
        runtime, settings = runtime_name(), LimitSettings()
    return [Check(f.name, f.status, f.detail, f.fix) for f in limits.diagnose(settings, runtime)]


LOCAL_CHECKS: list[Callable[[], Check | list[Check]]] = [
    git_identity,
    schedule,
    agent_sandbox,
    agent_limits,
]
"""The machine's offline checks, in the order ``harness doctor`` prints them."""
