"""The edge's one builder (STYLE rule 7; ARCHITECTURE "four floors"): the live services, the
outbox-backed Slack door, and what the dispatch backends need from the edge. Commands call these
and pass the results into core code, which never constructs a client itself."""

from __future__ import annotations

from typing import Any

from harness_cli import dryrun
from harness_cli.agents.factory import configured_runtime
from harness_cli.config import Config, load_config
from harness_cli.dispatch.backends import (
    RunCommand,
    use_ci_client,
    use_inline_runner,
)
from harness_cli.dispatch.ci import ActionsRuns
from harness_cli.errors import ConfigError
from harness_cli.intake.context import Intake
from harness_cli.outbox.doors import Doors
from harness_cli.outbox.outbound import Outbound
from harness_cli.services.forge import Forge, ForgeRouter, forge_map, home_forge
from harness_cli.services.github import GitHubSettings, LiveGitHub
from harness_cli.services.gitlab import GitLab, GitLabSettings, LiveGitLab
from harness_cli.services.jira import Jira, JiraSettings, LiveJira
from harness_cli.services.slack import LiveSlack, Slack, SlackSettings


def install(run_command: RunCommand) -> None:
    """What the edge hands down before any command runs: the inline dispatch backend starts a
    workflow through the CLI's own in-process ``run`` (dispatch sits below the CLI and never
    imports it), and the CI backends build their client here."""
    use_inline_runner(run_command)
    use_ci_client(ci_client)


def ci_client(backend: str = "gitlab-ci") -> Any:
    """The client of a CI dispatch backend: during ``--dry-run`` its pipeline writes are
    recorded, not made."""
    client: Any = live_gitlab() if backend != "github-actions" else ActionsRuns()
    return client if dryrun.ACTIVE is None else dryrun.RecordingGitLab(client, dryrun.ACTIVE)


def slack() -> Slack:
    """Slack as the operator (``SLACK_USER_TOKEN``, ``SLACK_API_URL``); during ``--dry-run``
    its writes are recorded instead of sent."""

    client = LiveSlack(SlackSettings.from_env())
    plan = dryrun.ACTIVE
    return client if plan is None else dryrun.RecordingSlack(client, plan)


def outbound(cfg: Config, client: Slack | None = None) -> Outbound:
    """Every Slack write goes through this, checked against ``outbound_allowlist``."""
    return Outbound(
        client or slack(), cfg.harness.allowlist, cfg.harness.thresholds, cfg.harness.obligations
    )


class _LazySlack:
    """Builds the live client on first use, so commands that never talk to Slack need no
    token."""

    def __init__(self) -> None:
        self._client: Slack | None = None

    def __getattr__(self, name: str) -> object:
        if self._client is None:
            self._client = slack()
        return getattr(self._client, name)


def lazy_slack() -> Slack:
    return _LazySlack()  # type: ignore[return-value]


def doors(cfg: Config | None = None, client: Slack | None = None) -> Doors:
    """What a run or an intake path speaks through, each door built on first use (a run that
    never talks to Slack needs no token). ``client``: a Slack client already connected."""
    chat = client or lazy_slack()
    return Doors(
        make_slack=lambda: chat,
        make_out=lambda: outbound(cfg or load_config(), chat),
        make_forge=gitlab,
        make_jira=jira,
        make_runtime=lambda: configured_runtime(cfg or load_config()),
    )


def intake_context() -> Intake:
    """poll-slack's and listen's context: Slack connected now (a cycle reads channels)."""
    return _intake(load_config(), slack())


def local_context() -> Intake:
    """For commands run by the operator at a shell: Slack is connected only if a call needs
    it (pause, status and most admin commands need none)."""
    return _intake(load_config(), lazy_slack())


def _intake(cfg: Config, client: Slack) -> Intake:
    return Intake.through(cfg, doors(cfg, client))


def gitlab() -> GitLab:
    """The forge port (services/forge.py) as the harness's account: each repository's calls go
    to its forge, GitLab (``GITLAB_URL``, ``GITLAB_TOKEN``) or GitHub (``GITHUB_URL``,
    ``GITHUB_TOKEN``); during ``--dry-run`` its writes are recorded instead of sent. The name
    is the one core code knew before GitHub was a forge."""

    client = forge_router()
    plan = dryrun.ACTIVE
    return client if plan is None else dryrun.RecordingGitLab(client, plan)  # type: ignore[return-value]


forge = gitlab


def forge_router(cfg: Config | None = None) -> ForgeRouter:
    if cfg is None:
        try:
            cfg = load_config()
        except ConfigError:
            cfg = None  # no config at all (a bare client in a test, `doctor` before init): GitLab
    routes = forge_map(cfg) if cfg is not None else {}
    home = home_forge(cfg) if cfg is not None else "gitlab"
    return ForgeRouter({"gitlab": live_gitlab, "github": live_github}, routes, home=home)


def live_gitlab() -> Forge:
    return LiveGitLab(GitLabSettings.from_env())


def live_github() -> Forge:
    return LiveGitHub(GitHubSettings.from_env())


def jira() -> Jira | None:
    """Jira as the harness's account (``JIRA_URL``, ``JIRA_USER``, ``JIRA_TOKEN``), or None when
    no ``JIRA_URL`` is configured: then tickets are read as Slack gives them and no action runs
    in Jira. During ``--dry-run`` its writes are recorded instead of sent."""

    if not JiraSettings.configured():
        return None
    client = LiveJira(JiraSettings.from_env())
    plan = dryrun.ACTIVE
    return client if plan is None else dryrun.RecordingJira(client, plan)
