"""harness init — create HARNESS_HOME, the workspace repo (optionally with a remote) and a
starter config. Safe to re-run: what exists is reported as skipped, never overwritten.
``--install-cron`` prints the crontab of the periodic subcommands; ``--yes`` installs it."""

from __future__ import annotations

from pathlib import Path

import typer

from harness_cli import paths
from harness_cli.commands import new_app
from harness_cli.output import emit
from harness_cli.result import Result

app = new_app("Create HARNESS_HOME, the workspace repo and a starter config.")

STARTER_HARNESS = """\
# harness.yaml — see the README for every key. Unknown keys are an error.
schema_version: 1
operator:
  slack_user_id: {user}      # only this user's "admin: …" messages are obeyed
  self_dm_channel: {dm}      # the operator's self-DM: admin commands in, case threads out
outbound_allowlist: [{dm}]   # the only channels the harness may post to
auto_monitor: true
"""

STARTER_PROJECTS = """\
# projects.yaml — one entry per team. Routing: Jira prefix, then Slack channel, then default.
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
"""


def _csv(values: list[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


@app.command()
def init(
    remote: str | None = typer.Option(None, "--remote", help="Git remote of the workspace repo."),
    slack_user: str = typer.Option("U0OPERATOR", "--slack-user", help="Operator's Slack id."),
    self_dm: str = typer.Option("D0SELF", "--self-dm", help="Operator's self-DM channel id."),
    project: str = typer.Option("team-a", "--project", help="First project's name."),
    channel: list[str] = typer.Option([], "--channel", help="Support channel id (repeatable)."),
    jira_prefix: list[str] = typer.Option([], "--jira-prefix", help="Jira prefix (repeatable)."),
    repo: list[str] = typer.Option([], "--repo", help="GitLab project path (repeatable)."),
    install_cron: bool = typer.Option(
        False, "--install-cron", help="Print the crontab of the periodic subcommands."
    ),
    install_hooks: bool = typer.Option(
        False, "--install-hooks", help="Print the claude CLI hooks that sync sessions via git."
    ),
    yes: bool = typer.Option(
        False,
        "--yes",
        help="Install what --install-cron / --install-hooks print (only the harness's parts).",
    ),
) -> None:
    """Create what a fresh machine needs; report what already exists as skipped."""
    from harness_cli.config import load_config
    from harness_cli.workspace import gitsync

    result = Result("init")
    home = paths.home()
    for sub in (home, paths.logs_dir(), paths.locks_dir(), paths.payloads_dir()):
        if sub.is_dir():
            result.skipped.append(f"{sub} exists")
        else:
            sub.mkdir(parents=True)
            result.changed.append(f"created {sub}")

    from harness_cli.intake.bootstrap import mark_installed

    mark_installed()  # older self-DM admin commands are history for this home, never re-run

    workspace = paths.workspace()
    if (workspace / ".git").exists():
        result.skipped.append(f"workspace repo {workspace} exists")
    else:
        gitsync.ensure_repo(workspace, remote_url=remote, lock_dir=paths.locks_dir())
        result.changed.append(
            f"workspace repo {workspace}" + (f" (remote {remote})" if remote else " (local only)")
        )

    config = paths.config_dir()
    written = _write_starter(
        config,
        {
            "harness.yaml": STARTER_HARNESS.format(user=slack_user, dm=self_dm),
            "projects.yaml": STARTER_PROJECTS.format(
                project=project,
                channels=_csv(channel),
                prefixes=_csv(jira_prefix),
                repos=_csv(repo),
            ),
            "mcp.json": '{\n  "mcpServers": {}\n}\n',
        },
    )
    for name, created in written.items():
        (result.changed if created else result.skipped).append(
            f"{'wrote' if created else 'kept'} {config / name}"
        )
    load_config(config)  # a starter (or kept) config that does not load is an error now
    result.data = {"home": str(home), "workspace": str(workspace), "config": str(config)}
    if install_cron:
        result.data["crontab"] = _cron(result, home, config, install=yes)
    if install_hooks:
        result.data["claude_hooks"] = _hooks(result, install=yes)
    result.messages.append("next: `harness doctor` checks tokens and services")
    emit(result)


def _hooks(result: Result, *, install: bool) -> dict[str, object]:
    """Never edits the user's claude settings without --yes; with it, only adds ours."""
    import json

    from harness_cli.memory.hooks_install import hook_settings, merge_into, settings_path

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


def _cron(result: Result, home: Path, config: Path, *, install: bool) -> str:
    """Print the block; write it only when asked to (a user's crontab is never edited
    silently)."""
    from harness_cli.errors import ServiceError
    from harness_cli.ops import schedule

    block = schedule.render(home=home.resolve(), config=config.resolve())
    units = schedule.cron_dir() / "systemd"
    if not install:
        result.messages.append(block.rstrip("\n"))
        result.messages.append(
            "not installed: re-run with --yes to put this block in your crontab (only the "
            f"lines between its markers change), or paste it into `crontab -e`. The listener "
            f"and a poll-slack timer are systemd user units in {units}."
        )
        return block
    existing = schedule.current()
    if existing is None:
        raise ServiceError(
            "no `crontab` command on this machine",
            hint=f"install cron (apt-get install cron), or use the systemd units in {units}",
        )
    if schedule.block_of(existing) == block:
        result.skipped.append("the crontab already has this harness block")
        return block
    schedule.install(schedule.merge(existing, block))
    jobs = len(schedule.entries(block))
    result.changed.append(f"installed the harness block in your crontab ({jobs} jobs)")
    return block


def _write_starter(folder: Path, files: dict[str, str]) -> dict[str, bool]:
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, bool] = {}
    for name, text in files.items():
        target = folder / name
        written[name] = not target.exists()
        if written[name]:
            target.write_text(text, encoding="utf-8")
    return written
