"""What ``harness init`` writes: a config that says what its flags said, the starter SOPs of
each project, and the env file cron and systemd read the tokens from.

An existing config is kept, but never while it contradicts the flags init was given: that is
refused with each conflict named (``--force`` rewrites the starter files, keeping a ``.bak``).
Prompts and the STYLE/INVESTIGATION SOPs are not copied: the packaged ones are used until the
operator adds their own (``harness_cli.resources``).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness_cli.errors import ConfigError

if TYPE_CHECKING:
    from harness_cli.config import Config

STARTER_HARNESS = """\
# harness.yaml — who the operator is and where the harness may speak. Unknown keys are an
# error. Every threshold has a default; the example config lists them all:
# harness_cli/defaults/agent-config/harness.yaml in the installed package.
schema_version: 1
operator:
  slack_user_id: {user}      # only this user's "admin: …" messages are obeyed
  self_dm_channel: {dm}      # the operator's self-DM: admin commands in, case threads out
outbound_allowlist: [{dm}]   # the only channels the harness may post to
auto_monitor: true
"""

STARTER_PROJECTS = """\
# projects.yaml — one entry per team. Routing: Jira prefix, then Slack channel, then default.
# sop/kb are relative to ../sops (harness.yaml's sops_dir).
schema_version: 1
default_project: {project}
projects:
  {project}:
    sop: "{project}/SOP.md"
    kb: "{project}/KNOWLEDGE-BASE.md"
    dfr_threads_dir: "{project}/threads"
    task_dir: "task-workspaces"
    slack_channels: [{channels}]
    jira_prefixes: [{prefixes}]
    repos: [{repos}]
    forge: {forge}   # where repos live: gitlab (GITLAB_URL/TOKEN) or github (GITHUB_URL/TOKEN)
"""

STARTER_SOP = """\
# {project}: standard operating procedure

What an investigation of a {project} ticket must check first: the services, the dashboards,
the usual suspects. The investigator reads this file on every run; edit it as you learn.
"""

STARTER_KB = """\
# {project}: knowledge base

Facts about {project}'s systems that an investigation may rely on (kb-update suggests more).
"""

ENV_TOKENS = ("SLACK_USER_TOKEN", "GITLAB_TOKEN", "ANTHROPIC_API_KEY")
"""The tokens the env file starts with, to be filled in."""
ENV_URLS = ("SLACK_API_URL", "GITLAB_URL", "ANTHROPIC_BASE_URL")
"""Service addresses (not secrets): copied from the environment init runs in, when set."""

ENV_HEADER = """\
# The harness's tokens, read by harness-cron (every crontab line) and by the systemd units
# (EnvironmentFile=). KEY=value lines, no `export`, double quotes only around values with
# spaces. Keep this file mode 0600; tokens never go in the crontab or in a unit file.
"""
ENV_OPTIONAL = """\
# SLACK_APP_TOKEN=xapp-…   only for `harness listen` (Socket Mode)
# HARNESS_CLAUDE_BIN=…     the claude CLI, when it is not on cron's PATH
"""


@dataclass
class Wanted:
    """What init's flags ask for; None/empty = not given."""

    slack_user: str | None = None
    self_dm: str | None = None
    project: str | None = None
    channels: list[str] = field(default_factory=list)
    jira_prefixes: list[str] = field(default_factory=list)
    repos: list[str] = field(default_factory=list)
    forge: str | None = None
    """``--forge``: where the first project's repos live (None: not given; gitlab)."""


@dataclass
class Written:
    changed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _csv(values: list[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def write_config(folder: Path, wanted: Wanted, *, force: bool = False) -> Written:
    """Write the starter config, keep a matching one, refuse a contradicting one."""
    from harness_cli.config import load_config

    out = Written()
    wrote = False
    names = ("harness.yaml", "projects.yaml")
    exists = [(folder / n).exists() for n in names]
    if all(exists) and not force:
        found = conflicts(load_config(folder), wanted)
        if found:
            raise ConfigError(
                f"the config in {folder} contradicts the flags: " + "; ".join(found),
                hint="edit those files, point HARNESS_CONFIG at another folder, or re-run "
                "with --force to rewrite them from the flags (the old ones are kept as .bak)",
            )
        out.skipped += [f"kept {folder / n} (it matches the flags)" for n in names]
    elif any(exists) and not force:
        missing = [n for n, e in zip(names, exists, strict=True) if not e]
        raise ConfigError(
            f"{folder} has only part of a config ({', '.join(missing)} missing)",
            hint="restore the missing file, or re-run with --force to write both from the flags",
        )
    else:
        base = load_config(folder) if all(exists) else None
        texts = _starter_texts(wanted, base, folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in texts.items():
            target = folder / name
            if target.exists():
                target.replace(target.with_name(name + ".bak"))
                out.changed.append(f"rewrote {target} (the old one is {name}.bak)")
            else:
                out.changed.append(f"wrote {target}")
            target.write_text(text, encoding="utf-8")
        wrote = True
    mcp = folder / "mcp.json"
    if not mcp.exists():
        mcp.write_text('{\n  "mcpServers": {}\n}\n', encoding="utf-8")
        out.changed.append(f"wrote {mcp}")
    cfg = load_config(folder)  # what was kept or written must load, now rather than at 3 am
    if wrote:  # a kept config's SOPs are the operator's business (doctor names missing ones)
        _write_project_sops(cfg, out)
    return out


def conflicts(cfg: Config, wanted: Wanted) -> list[str]:
    """Each way the loaded config says something else than the flags (empty = consistent)."""
    found: list[str] = []
    harness = cfg.dir / "harness.yaml"
    op = cfg.harness.operator
    if wanted.slack_user and wanted.slack_user != op.slack_user_id:
        found.append(
            f"{harness} has operator.slack_user_id {op.slack_user_id}, "
            f"--slack-user says {wanted.slack_user}"
        )
    if wanted.self_dm and wanted.self_dm != op.self_dm_channel:
        found.append(
            f"{harness} has operator.self_dm_channel {op.self_dm_channel}, "
            f"--self-dm says {wanted.self_dm}"
        )
    projects = cfg.dir / "projects.yaml"
    name = wanted.project or cfg.projects.default_project
    project = cfg.projects.projects.get(name)
    if project is None:
        found.append(
            f"{projects} has no project {name!r} (it has {', '.join(cfg.projects.projects)})"
        )
        return found
    for flag, given, have in (
        ("--channel", wanted.channels, project.slack_channels),
        ("--jira-prefix", wanted.jira_prefixes, project.jira_prefixes),
        ("--repo", wanted.repos, project.repos),
    ):
        extra = [v for v in given if v not in have]
        if extra:
            found.append(
                f"{projects} project {name} has {flag[2:]} [{', '.join(have)}], "
                f"{flag} says {', '.join(extra)}"
            )
    if wanted.forge and wanted.forge != project.forge:
        found.append(
            f"{projects} project {name} has forge {project.forge}, --forge says {wanted.forge}"
        )
    return found


def _starter_texts(wanted: Wanted, base: Config | None, folder: Path) -> dict[str, str]:
    user, dm = wanted.slack_user, wanted.self_dm
    project = wanted.project
    channels, prefixes, repos = wanted.channels, wanted.jira_prefixes, wanted.repos
    forge = wanted.forge
    if base is not None:  # --force: flags not given keep what the old config said
        user = user or base.harness.operator.slack_user_id
        dm = dm or base.harness.operator.self_dm_channel
        project = project or base.projects.default_project
        old = base.projects.projects.get(project)
        if old is not None:
            channels = channels or old.slack_channels
            prefixes = prefixes or old.jira_prefixes
            repos = repos or old.repos
            forge = forge or old.forge
    missing = [f for f, v in (("--slack-user", user), ("--self-dm", dm)) if not v]
    if missing:
        raise ConfigError(
            f"no config in {folder} yet, and a new one needs {' and '.join(missing)}",
            hint="give the operator's Slack user id (U…) and self-DM channel id (D…), e.g. "
            "`harness init --slack-user U123 --self-dm D456 --channel C789 --repo group/service`",
        )
    project = project or "team-a"
    return {
        "harness.yaml": STARTER_HARNESS.format(user=user, dm=dm),
        "projects.yaml": STARTER_PROJECTS.format(
            project=project,
            channels=_csv(channels),
            prefixes=_csv(prefixes),
            repos=_csv(repos),
            forge=forge or "gitlab",
        ),
    }


def _write_project_sops(cfg: Config, out: Written) -> None:
    """A starter SOP and knowledge base for each project that has none (the investigator reads
    both on every run; the packaged STYLE.md and INVESTIGATION.md need no copy)."""
    from harness_cli.loop.prompts import sops_dir

    root = sops_dir(cfg)
    for name, project in cfg.projects.projects.items():
        for rel, text in ((project.sop, STARTER_SOP), (project.kb, STARTER_KB)):
            target = root / rel
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.format(project=name), encoding="utf-8")
            out.changed.append(f"wrote {target}")


def write_env_file(path: Path, forge: str | None = None) -> Written:
    """The env file with the token names to fill in (mode 0600 from its first byte); an
    existing one is kept, with its mode tightened if others could read it."""
    out = Written()
    if path.exists():
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            path.chmod(0o600)
            out.changed.append(f"{path} was mode {mode:04o}: now 0600 (it holds tokens)")
        else:
            out.skipped.append(f"kept {path}")
        return out
    tokens: tuple[str, ...] = ENV_TOKENS
    urls: tuple[str, ...] = ENV_URLS
    if forge == "github":  # the team's forge's token and address to fill in, not GitLab's
        tokens = tuple("GITHUB_TOKEN" if n == "GITLAB_TOKEN" else n for n in tokens)
        urls = tuple("GITHUB_URL" if n == "GITLAB_URL" else n for n in urls)
    lines = [ENV_HEADER]
    lines += [f"{name}=\n" for name in tokens]
    for name in urls:
        value = os.environ.get(name)
        lines.append(f"{name}={value}\n" if value else f"# {name}=\n")
    lines.append(ENV_OPTIONAL)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("".join(lines))
    out.changed.append(f"wrote {path} (mode 0600): fill in {', '.join(tokens)}")
    return out


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=value`` lines as the wrapper's ``set -a; . file`` and systemd read them: comments
    and blank lines skipped, one level of double or single quotes removed."""
    values: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip().removeprefix("export ").strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values
