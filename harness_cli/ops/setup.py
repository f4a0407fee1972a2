"""What ``harness init`` writes: a config that says what its flags said, the starter SOPs of
each project, and the env file cron and systemd read the tokens from.

An existing config is kept, but never while it contradicts the flags init was given: that is
refused with each conflict named (``--force`` rewrites the starter files, keeping a ``.bak``).
Prompts and the STYLE/INVESTIGATION SOPs are not copied: the packaged ones are used until the
operator adds their own (``harness_cli.resources``).
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from harness_cli.config import HarnessConfig, ProjectsConfig, load_config
from harness_cli.errors import ConfigError
from harness_cli.loop.prompts import sops_dir

if TYPE_CHECKING:
    from harness_cli.config import Config

HARNESS_HEADER = """\
# harness.yaml — who the operator is and where the harness may speak. Unknown keys are an
# error. Every threshold has a default; the example config lists them all:
# harness_cli/defaults/agent-config/harness.yaml in the installed package.
#   operator.slack_user_id: only this user's "admin: …" messages are obeyed
#   operator.self_dm_channel: the operator's self-DM: admin commands in, case threads out
#   outbound_allowlist: the only channels the harness may post to
"""

PROJECTS_HEADER = """\
# projects.yaml — one entry per team. Routing: Jira prefix, then Slack channel, then default.
# sop/kb are relative to ../sops (harness.yaml's sops_dir).
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
ENV_URLS_NEEDED = ("GITLAB_URL",)
"""The addresses with no default (Slack, the model and GitHub have theirs): written to be
filled in, like a token, not as a comment — README's "fill in … GITLAB_URL" was a line to
uncomment that init's "fill in" list did not name."""

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


# What each flag may hold: Slack and Jira ids are plain tokens, so a value like "#alice" or
# "@bob" (a name, not an id) is refused before anything is written. A project name may be any
# words (it is written by a YAML serializer) but becomes a folder under sops/.
FLAG_FORMATS: dict[str, tuple[str, str]] = {
    "--slack-user": (
        r"[UW][A-Z0-9]{2,}",
        "a Slack user id like U0123ABCD (profile → ⋮ → Copy member ID)",
    ),
    "--self-dm": (
        r"[DCG][A-Z0-9]{2,}",
        "a Slack channel id like D0123ABCD (open the DM → channel details)",
    ),
    "--channel": (r"[CG][A-Z0-9]{2,}", "a Slack channel id like C0123ABCD, not its #name"),
    "--jira-prefix": (r"[A-Z][A-Z0-9_]*", "a Jira project key like OPS"),
    "--repo": (r"[\w.-]+(/[\w.-]+)+", "a repository path like group/service"),
}


def validate(wanted: Wanted) -> None:
    """Each flag value has the shape of what it names, in one line naming the flag."""

    given = [
        ("--slack-user", [wanted.slack_user] if wanted.slack_user else []),
        ("--self-dm", [wanted.self_dm] if wanted.self_dm else []),
        ("--channel", wanted.channels),
        ("--jira-prefix", wanted.jira_prefixes),
        ("--repo", wanted.repos),
    ]
    for flag, values in given:
        pattern, what = FLAG_FORMATS[flag]
        for value in values:
            if not re.fullmatch(pattern, value):
                raise ConfigError(
                    f"{flag} {value!r} is not {what}", hint=f"re-run with {flag} <id>"
                )
    name = wanted.project
    if name is not None and (
        not name.strip()
        or name != name.strip()
        or any(c in name for c in "/\\")
        or name.startswith(".")
        or not name.isprintable()
        or len(name) > 100
    ):
        raise ConfigError(
            f"--project {name!r} cannot be a project name",
            hint="use printable words without / or \\ and no leading dot (it becomes a folder "
            "under sops/)",
        )


def write_config(folder: Path, wanted: Wanted, *, force: bool = False) -> Written:
    """Write the starter config, keep a matching one, refuse a contradicting one. With
    ``force``, only a file that contradicts the flags (or cannot be read) is rewritten, and
    only in the keys the flags name; each old version is kept as the next free backup."""

    validate(wanted)
    out = Written()
    names = ("harness.yaml", "projects.yaml")
    exists = [(folder / n).exists() for n in names]
    if any(exists) and not all(exists) and not force:
        missing = [n for n, e in zip(names, exists, strict=True) if not e]
        raise ConfigError(
            f"{folder} has only part of a config ({', '.join(missing)} missing)",
            hint="restore the missing file, or re-run with --force to write both from the flags",
        )
    if all(exists) and not force:
        try:
            cfg = load_config(folder)
        except ConfigError as exc:
            raise ConfigError(
                exc.message,
                hint=f"{exc.hint or 'fix it'}, or re-run with --force to rewrite it from the "
                "flags (the old one is kept as a backup)",
            ) from None
        found = conflicts(cfg, wanted)
        if found:
            raise ConfigError(
                f"the config in {folder} contradicts the flags: " + "; ".join(found),
                hint="edit those files, point HARNESS_CONFIG at another folder, or re-run "
                "with --force to rewrite them from the flags (the old ones are kept as .bak)",
            )
        out.skipped += [f"kept {folder / n} (it matches the flags)" for n in names]
        wrote = False
    else:
        wrote = _write_from_flags(folder, wanted, out)
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


def _readable(path: Path, model: type[Any]) -> dict[str, Any] | None:
    """The file's settings when it parses and validates; None when it is missing or broken."""
    # main() reads the env file through this module on `harness --help`'s path

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        model.model_validate(data)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError):
        return None
    return data if isinstance(data, dict) else None


def _write_from_flags(folder: Path, wanted: Wanted, out: Written) -> bool:
    """Each file that is missing, unreadable or contradicts the flags, rewritten from them
    (readable files keep every key the flags do not name). True when anything was written."""

    old_h = _readable(folder / "harness.yaml", HarnessConfig)
    old_p = _readable(folder / "projects.yaml", ProjectsConfig)
    new_h = _harness_data(wanted, old_h, folder)
    new_p = _projects_data(wanted, old_p)
    try:  # both are checked before either is written
        HarnessConfig.model_validate(new_h)
        ProjectsConfig.model_validate(new_p)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(
            f"the flags would make an invalid config in {folder}: {where}: {err['msg']}",
            hint="edit the files by hand, or pass flags that agree with the other projects",
        ) from None
    folder.mkdir(parents=True, exist_ok=True)
    wrote = False
    for name, old, new, header in (
        ("harness.yaml", old_h, new_h, HARNESS_HEADER),
        ("projects.yaml", old_p, new_p, PROJECTS_HEADER),
    ):
        target = folder / name
        if old is not None and old == new:
            out.skipped.append(f"kept {target} (it matches the flags)")
            continue
        text = (header if old is None else "") + _dump(new)
        if target.exists():
            backup = _next_backup(target)
            shutil.copy2(target, backup)
            out.changed.append(f"rewrote {target} (the old one is {backup.name})")
        else:
            out.changed.append(f"wrote {target}")
        tmp = target.with_name(f".{name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
        wrote = True
    return wrote


def _dump(data: dict[str, Any]) -> str:
    # main() reads the env file through this module on `harness --help`'s path

    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None)


def _next_backup(target: Path) -> Path:
    """``NAME.bak``, then ``NAME.bak.1``, ``NAME.bak.2``…: a backup is never overwritten."""
    candidate = target.with_name(target.name + ".bak")
    n = 0
    while candidate.exists():
        n += 1
        candidate = target.with_name(f"{target.name}.bak.{n}")
    return candidate


def _harness_data(wanted: Wanted, old: dict[str, Any] | None, folder: Path) -> dict[str, Any]:
    if old is not None:
        data = copy.deepcopy(old)
        op = data.setdefault("operator", {})
        if wanted.self_dm and wanted.self_dm != op.get("self_dm_channel"):
            allow = data.get("outbound_allowlist")
            if isinstance(allow, list):  # the old self-DM's place in it goes to the new one
                data["outbound_allowlist"] = [
                    wanted.self_dm if c == op.get("self_dm_channel") else c for c in allow
                ]
            op["self_dm_channel"] = wanted.self_dm
        if wanted.slack_user:
            op["slack_user_id"] = wanted.slack_user
        return data
    missing = [
        f for f, v in (("--slack-user", wanted.slack_user), ("--self-dm", wanted.self_dm)) if not v
    ]
    if missing:
        raise ConfigError(
            f"no readable harness.yaml in {folder}, and a new one needs {' and '.join(missing)}",
            hint="give the operator's Slack user id (U…) and self-DM channel id (D…), e.g. "
            "`harness init --slack-user U123 --self-dm D456 --channel C789 --repo group/service`",
        )
    return {
        "schema_version": 1,
        "operator": {"slack_user_id": wanted.slack_user, "self_dm_channel": wanted.self_dm},
        "outbound_allowlist": [wanted.self_dm],
        "auto_monitor": True,
    }


def _projects_data(wanted: Wanted, old: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = (
        copy.deepcopy(old) if old is not None else {"schema_version": 1, "projects": {}}
    )
    name = str(wanted.project or data.get("default_project") or "team-a")
    projects: dict[str, Any] = data.setdefault("projects", {})
    if name not in projects:
        projects[name] = {
            "sop": f"{name}/SOP.md",
            "kb": f"{name}/KNOWLEDGE-BASE.md",
            "dfr_threads_dir": f"{name}/threads",
            "task_dir": "task-workspaces",
            "slack_channels": [],
            "jira_prefixes": [],
            "repos": [],
        }
    if wanted.project or "default_project" not in data:
        data["default_project"] = name
        data = {"schema_version": data.pop("schema_version", 1),
                "default_project": data.pop("default_project"), **data}  # fmt: skip
    project = data["projects"][name]
    for key, given in (
        ("slack_channels", wanted.channels),
        ("jira_prefixes", wanted.jira_prefixes),
        ("repos", wanted.repos),
    ):
        if given:
            project[key] = list(given)
    if wanted.forge:  # where repos live: gitlab (GITLAB_URL/TOKEN) or github (GITHUB_URL/TOKEN)
        project["forge"] = wanted.forge
    return data


def _write_project_sops(cfg: Config, out: Written) -> None:
    """A starter SOP and knowledge base for each project that has none (the investigator reads
    both on every run; the packaged STYLE.md and INVESTIGATION.md need no copy)."""

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
    fill = list(tokens)
    for name in urls:
        value = os.environ.get(name)
        if value:
            lines.append(f"{name}={value}\n")
        elif name in ENV_URLS_NEEDED:
            lines.append(f"{name}=\n")
            fill.append(name)
        else:
            lines.append(f"# {name}=\n")
    lines.append(ENV_OPTIONAL)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("".join(lines))
    out.changed.append(f"wrote {path} (mode 0600): fill in {', '.join(fill)}")
    return out
