"""The install half of ``harness doctor``: the env file cron reads, the tokens each configured
feature needs, the templates and SOPs (packaged or overridden), the claude CLI, and an
``./agent-config`` that is being ignored. No check prints a token's value."""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass
from string import Template

from harness_cli import paths, resources
from harness_cli.config import Config, load_config
from harness_cli.errors import HarnessError
from harness_cli.loop.prompts import sops_dir
from harness_cli.ops.doctor.check import Check
from harness_cli.ops.doctor.checks import listener_enabled
from harness_cli.paths import read_env_file
from harness_cli.services.claude_cli import PINNED_VERSION, find_claude

CLAUDE_INSTALL = (
    "npm install --prefix ~/.local/share/harness-claude @anthropic-ai/claude-code@{v}, then "
    "put HARNESS_CLAUDE_BIN=~/.local/share/harness-claude/node_modules/.bin/claude in {env} "
    "(in a checkout: make claude-cli)"
)


@dataclass(frozen=True)
class Environment:
    """What a scheduled run sees: this process's environment overlaid by the env file's
    non-empty values (harness-cron sources the file after cron's environment, systemd reads
    it with EnvironmentFile=)."""

    values: dict[str, str]
    in_file: frozenset[str]
    file_exists: bool

    def get(self, name: str, default: str = "") -> str:
        return self.values.get(name) or default


def environment() -> Environment:
    path = paths.env_file()
    try:
        found = {k: v for k, v in read_env_file(path).items() if v}
    except FileNotFoundError:
        return Environment(dict(os.environ), frozenset(), False)
    except (OSError, UnicodeDecodeError):
        found = {}
    return Environment({**os.environ, **found}, frozenset(found), True)


def env_file(scheduled: bool) -> Check:
    path = paths.env_file()
    if not path.exists():
        return Check(
            "env file",
            "fail" if scheduled else "warn",
            f"{path} does not exist: cron and systemd read the tokens from it",
            "run `harness init` (it writes the file with the token names to fill in)",
        )
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check(
            "env file", "fail", f"{path} is mode {mode:04o}: others can read its tokens",
            f"chmod 600 {path}",
        )  # fmt: skip
    return Check("env file", "ok", f"{path} (mode 0600)")


def _needs(cfg: Config | None) -> dict[str, str]:
    """Token → the configured feature that needs it (absent: nothing configured needs it)."""
    needs = {"SLACK_USER_TOKEN": "reads the support channels and the self-DM, posts to it"}
    if cfg is None:
        return needs
    on = {
        forge: [n for n, p in cfg.projects.projects.items() if p.repos and p.forge == forge]
        for forge in ("gitlab", "github")
    }
    if on["gitlab"]:
        needs["GITLAB_TOKEN"] = f"opens and watches the MRs of {', '.join(on['gitlab'])}"
        needs["GITLAB_URL"] = "the GitLab instance of those repos"
    if on["github"]:
        needs["GITHUB_TOKEN"] = f"opens and watches the PRs of {', '.join(on['github'])}"
    if runtime(cfg)[0] == "anthropic" or not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        needs["ANTHROPIC_API_KEY"] = "the model (the claude CLI reads it too)"

    if listener_enabled():  # a unit file nobody enabled runs nothing and needs nothing
        needs["SLACK_APP_TOKEN"] = "harness-listen.service (Socket Mode) is enabled"
    return needs


def tokens(cfg: Config | None, env: Environment, scheduled: bool) -> list[Check]:
    """Each token a configured feature needs: missing is a failure; set only in this shell is
    a failure once a schedule runs (cron would not see it)."""
    out: list[Check] = []
    where = paths.env_file()
    for name, why in _needs(cfg).items():
        value = env.get(name)
        fix = f"add {name}=<value> to {where}"
        if not value:
            out.append(Check(name, "fail", f"not set ({why})", fix))
        elif name not in env.in_file:
            detail = f"set in this shell only, not in {where}"
            out.append(Check(name, "fail" if scheduled else "warn", detail, fix))
        else:
            out.append(Check(name, "ok", f"set in {where}"))
    return out


def runtime(cfg: Config) -> tuple[str, bool]:
    """The runtime a run will use and whether it was chosen (HARNESS_RUNTIME or harness.yaml)
    rather than defaulted."""
    chosen = os.environ.get("HARNESS_RUNTIME") or cfg.harness.runtime
    return (chosen, True) if chosen else ("claude-code", False)


def claude_cli(cfg: Config) -> Check:
    name, chosen = runtime(cfg)
    if name != "claude-code":
        return Check("claude CLI", "ok", f"not used (runtime {name})")
    install = CLAUDE_INSTALL.format(v=PINNED_VERSION, env=paths.env_file())
    claude = find_claude()
    if claude is None:
        if chosen:
            return Check(
                "claude CLI",
                "fail",
                "runtime claude-code, but no claude on PATH, HARNESS_CLAUDE_BIN or .tools/",
                install,
            )
        return Check(
            "claude CLI",
            "warn",
            "not found (PATH, HARNESS_CLAUDE_BIN, .tools/): runs use the anthropic runtime",
            install,
        )
    try:
        proc = subprocess.run(
            [str(claude), "--version"], capture_output=True, text=True, check=False, timeout=30
        )
        version, code = proc.stdout.strip(), str(proc.returncode)
    except OSError as exc:
        version, code = "", str(exc)
    if code != "0" or not version:
        return Check("claude CLI", "fail", f"{claude} --version exited {code}", install)
    if PINNED_VERSION not in version:
        return Check(
            "claude CLI",
            "warn",
            f"{claude} is {version}; the harness is tested with {PINNED_VERSION}",
            install,
        )
    return Check("claude CLI", "ok", f"{claude} {version}")


def templates(cfg: Config) -> Check:
    """Every packaged template resolves; the operator's overrides are listed, and one that uses
    a placeholder the harness never fills in fails now rather than at the next ticket."""

    overridden: list[str] = []
    broken: list[str] = []
    for name in resources.template_names():
        found = resources.template(cfg.dir, name)
        if found is None or not found.overridden:
            continue
        overridden.append(name)
        shipped = resources.packaged_prompts() / f"{name}.md"
        known = set(Template(shipped.read_text(encoding="utf-8")).get_identifiers())
        mine = Template(found.path.read_text(encoding="utf-8"))
        unknown = sorted(set(mine.get_identifiers()) - known)
        if not mine.is_valid() or unknown:
            broken.append(f"{found.path} ({', '.join('$' + u for u in unknown) or 'bad $'})")
    total = len(resources.template_names())
    if broken:
        return Check(
            "templates",
            "fail",
            "placeholders the harness never fills in: " + "; ".join(broken),
            "use the packaged template's placeholders ($name; $$ for a literal dollar)",
        )
    where = cfg.dir / "prompts"
    detail = (
        f"{total} templates: {len(overridden)} overridden in {where} ({', '.join(overridden)})"
        if overridden
        else f"{total} templates, all packaged (add {where}/NAME.md to override one)"
    )
    return Check("templates", "ok", detail)


def sops(cfg: Config) -> Check:
    root = sops_dir(cfg)
    own = [n for n in resources.PACKAGED_SOPS if (r := resources.sop(root, n)) and r.overridden]
    missing = [
        str(root / rel)
        for project in cfg.projects.projects.values()
        for rel in (project.sop, project.kb)
        if not (root / rel).is_file()
    ]
    base = ", ".join(resources.PACKAGED_SOPS)
    detail = f"{base}: " + (f"overridden in {root} ({', '.join(own)})" if own else "packaged")
    if missing:
        return Check(
            "SOPs",
            "warn",
            detail + "; missing: " + ", ".join(missing),
            "create them (`harness init` writes starters): the investigator reads both",
        )
    return Check("SOPs", "ok", detail + "; every project's SOP and knowledge base exist")


def stray_config() -> list[Check]:
    stray = paths.stray_config()
    if stray is None:
        return []
    return [
        Check(
            "./agent-config",
            "warn",
            f"{stray} is not used: the config is {paths.config_dir()}",
            f"to use it, set HARNESS_CONFIG={stray} (and re-install the schedule)",
        )
    ]


def load() -> tuple[Config | None, Check]:
    try:
        cfg = load_config()
    except HarnessError as exc:
        return None, Check("config", "fail", exc.message, exc.hint or "fix the file named above")
    names = ", ".join(cfg.projects.projects)
    return cfg, Check("config", "ok", f"{cfg.dir} (projects: {names})")
