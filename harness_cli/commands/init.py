"""harness init — create HARNESS_HOME, the workspace repo (optionally with a remote), a config
that says what the flags say, each project's starter SOP and the env file for the tokens.
Safe to re-run: what exists is reported as skipped; a config that contradicts the flags is
refused with the conflict named (``--force`` rewrites it). ``--install-cron`` and
``--install-systemd`` print the schedule with this machine's paths; ``--yes`` installs it."""

from __future__ import annotations

from pathlib import Path

import typer

from harness_cli import paths
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.errors import InputError, ServiceError
from harness_cli.intake.bootstrap import mark_installed
from harness_cli.memory.hooks_install import hook_settings, merge_into, settings_path
from harness_cli.ops import schedule, setup
from harness_cli.output import emit
from harness_cli.result import Result
from harness_cli.services.forge import FORGES
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import gitsync

app = new_app("Create HARNESS_HOME, the workspace repo and a starter config.")


@app.command()
def init(
    remote: str | None = typer.Option(None, "--remote", help="Git remote of the workspace repo."),
    slack_user: str | None = typer.Option(
        None, "--slack-user", help="Operator's Slack user id (U…); needed for a new config."
    ),
    self_dm: str | None = typer.Option(
        None, "--self-dm", help="Operator's self-DM channel id (D…); needed for a new config."
    ),
    project: str | None = typer.Option(None, "--project", help="First project's name [team-a]."),
    channel: list[str] = typer.Option([], "--channel", help="Support channel id (repeatable)."),
    jira_prefix: list[str] = typer.Option([], "--jira-prefix", help="Jira prefix (repeatable)."),
    repo: list[str] = typer.Option(
        [], "--repo", help="GitLab project path or GitHub owner/name (repeatable)."
    ),
    forge: str | None = typer.Option(
        None, "--forge", help="Where the project's repos live: gitlab [default] or github."
    ),
    install_cron: bool = typer.Option(
        False, "--install-cron", help="Print the crontab of the periodic subcommands."
    ),
    install_systemd: bool = typer.Option(
        False,
        "--install-systemd",
        help="Print the systemd user units: a timer per periodic subcommand, listen, sessions.",
    ),
    install_hooks: bool = typer.Option(
        False, "--install-hooks", help="Print the claude CLI hooks that sync sessions via git."
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        help="Install what --install-cron / --install-systemd / --install-hooks print.",
    ),
    force: bool = typer.Option(
        False, "--force", help="Rewrite a config that contradicts the flags (keeps a .bak)."
    ),
) -> None:
    """Create what a fresh machine needs; report what already exists as skipped."""

    if forge is not None and forge not in FORGES:
        raise InputError(f"--forge {forge!r} is not a forge", hint="use gitlab or github")
    result = Result("init")
    home = paths.home()
    config = paths.install_config_dir()
    # Refuse a contradicting config before anything else is created.
    wanted = setup.Wanted(slack_user, self_dm, project, channel, jira_prefix, repo, forge)
    written = setup.write_config(config, wanted, force=force)
    for sub in (home, paths.logs_dir(), paths.locks_dir(), paths.payloads_dir()):
        if sub.is_dir():
            result.skipped.append(f"{sub} exists")
        else:
            sub.mkdir(parents=True)
            result.changed.append(f"created {sub}")
    result.changed += written.changed
    result.skipped += written.skipped
    env = setup.write_env_file(paths.env_file(), forge)
    result.changed += env.changed
    result.skipped += env.skipped

    mark_installed()  # older self-DM admin commands are history for this home, never re-run

    workspace = paths.workspace()
    if (workspace / ".git").exists():
        result.skipped.append(f"workspace repo {workspace} exists")
    else:
        done = gitsync.ensure_repo(workspace, remote_url=remote, lock_dir=paths.locks_dir())
        how = {"cloned": "cloned from", "adopted": "joined"}.get(done.action, "remote")
        result.changed.append(
            f"workspace repo {workspace}" + (f" ({how} {remote})" if remote else " (local only)")
        )
    result.data = {
        "home": str(home),
        "workspace": str(workspace),
        "config": str(config),
        "env_file": str(paths.env_file()),
    }
    stray = paths.stray_config()
    if stray is not None:
        result.messages.append(
            f"note: {stray} is not used (the config is {config}); set "
            f"HARNESS_CONFIG={stray.resolve()} to use that one instead"
        )
    if install_cron:
        result.data["crontab"] = _cron(result, home, config, install=yes)
    if install_systemd:
        result.data["systemd"] = _systemd(result, install=yes)
    if install_hooks:
        result.data["claude_hooks"] = _hooks(result, install=yes)
    result.messages.append(
        f"next: fill in the tokens in {paths.env_file()}, then `harness doctor` checks them "
        "against Slack, GitLab and the model"
    )
    emit(result)


def _hooks(result: Result, *, install: bool) -> dict[str, object]:
    """Never edits the user's claude settings without --yes; with it, only adds ours."""
    import json

    wanted = hook_settings()
    target = settings_path() / "settings.json"
    if not install:
        result.messages.append(json.dumps(wanted, indent=2))
        result.messages.append(f"not installed: re-run with --yes to add these hooks to {target}")
    elif merge_into(target, wanted):
        result.changed.append(f"added the session-sync hooks to {target}")
    else:
        result.skipped.append(f"the session-sync hooks are already in {target}")
    return wanted


def _render(home: Path, config: Path, name: str = "crontab") -> str:
    """The crontab block or a unit, with this run's HARNESS_* paths made absolute."""

    return schedule.render(
        home=home.resolve(),
        config=config.resolve(),
        workspace=paths.workspace().resolve(),
        worktrees=load_config(config).harness.delivery.root().resolve(),
        name=name,
    )


def _cron(result: Result, home: Path, config: Path, *, install: bool) -> str:
    """Print the block; write it only when asked to (a user's crontab is never edited
    silently)."""

    block = _render(home, config)
    if not install:
        result.messages.append(block.rstrip("\n"))
        result.messages.append(
            "not installed: re-run with --yes to put this block in your crontab (only the "
            "lines between its markers change), or paste it into `crontab -e`. Without cron, "
            "the same jobs are systemd timers: `harness init --install-systemd`."
        )
        return block
    existing = schedule.current()
    if existing is None:
        raise ServiceError(
            "no `crontab` command on this machine",
            hint="install cron (apt-get install cron), or use `harness init --install-systemd`",
        )
    if schedule.block_of(existing) == block:
        result.skipped.append("the crontab already has this harness block")
        return block
    schedule.install(schedule.merge(existing, block))
    jobs = len(schedule.entries(block))
    result.changed.append(f"installed the harness block in your crontab ({jobs} jobs)")
    return block


def _systemd(result: Result, *, install: bool) -> dict[str, str]:
    """The user units with this machine's paths; written (never enabled) with --yes."""

    home, config = paths.home(), paths.install_config_dir()
    units = {name: _render(home, config, f"systemd/{name}") for name in schedule.unit_names()}
    folder = schedule.systemd_dir()
    if not install:
        for name, text in units.items():
            result.messages.append(f"# {folder / name}\n{text.rstrip()}")
        result.messages.append(f"not installed: re-run with --yes to write them into {folder}")
        return units
    for name, text in units.items():
        target = folder / name
        if target.exists() and target.read_text(encoding="utf-8") == text:
            result.skipped.append(f"{target} is up to date")
            continue
        atomic_write_text(target, text)
        result.changed.append(f"wrote {target}")
    result.messages.append(
        "enable the timers (each replaces its crontab line: use one or the other): "
        f"{schedule.enable_command()}; the listener is optional: "
        "systemctl --user enable --now harness-listen.service"
    )
    return units
