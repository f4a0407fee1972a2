"""The one place outside services are built (STYLE rule 7): commands call these and pass the
results into core code, which never constructs a client itself."""

from __future__ import annotations

from harness_cli.config import Config
from harness_cli.ops.outbound import Outbound
from harness_cli.services.gitlab import GitLab
from harness_cli.services.jira import Jira
from harness_cli.services.slack import LiveSlack, Slack, SlackSettings


def slack() -> Slack:
    """Slack as the operator (``SLACK_USER_TOKEN``, ``SLACK_API_URL``); during ``--dry-run``
    its writes are recorded instead of sent."""
    from harness_cli import dryrun

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


def gitlab() -> GitLab:
    """GitLab as the harness's account (``GITLAB_URL``, ``GITLAB_TOKEN``)."""
    from harness_cli import dryrun
    from harness_cli.services.gitlab import GitLabSettings, LiveGitLab

    client = LiveGitLab(GitLabSettings.from_env())
    plan = dryrun.ACTIVE
    return client if plan is None else dryrun.RecordingGitLab(client, plan)


def jira() -> Jira | None:
    """Jira as the harness's account (``JIRA_URL``, ``JIRA_USER``, ``JIRA_TOKEN``), or None when
    no ``JIRA_URL`` is configured: then tickets are read as Slack gives them and no action runs
    in Jira. During ``--dry-run`` its writes are recorded instead of sent."""
    from harness_cli import dryrun
    from harness_cli.services.jira import JiraSettings, LiveJira

    if not JiraSettings.configured():
        return None
    client = LiveJira(JiraSettings.from_env())
    plan = dryrun.ACTIVE
    return client if plan is None else dryrun.RecordingJira(client, plan)
