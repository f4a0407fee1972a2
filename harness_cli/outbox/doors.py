"""The doors a run speaks through, handed down by the edge (``wiring.doors``): the
outbox-backed Slack door, the forge, Jira and the model runtime. Core code that was not handed
a ``Doors`` does not speak: it returns or raises, and its caller speaks (ARCHITECTURE "ports
passed down").

Each door is built on first use, so a run that never talks to Slack needs no token, and a
door first used inside ``--dry-run`` records instead of sending."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from harness_cli.outbox.outbound import Outbound
from harness_cli.services.gitlab import GitLab
from harness_cli.services.jira import Jira
from harness_cli.services.runtime import Runtime
from harness_cli.services.slack import Slack


@dataclass
class Doors:
    make_slack: Callable[[], Slack]
    make_out: Callable[[], Outbound]
    make_forge: Callable[[], GitLab]
    make_jira: Callable[[], Jira | None]
    make_runtime: Callable[[], Runtime]

    @cached_property
    def slack(self) -> Slack:
        """Slack as the operator, for reads (threads, replies); writes go through ``out``."""
        return self.make_slack()

    @cached_property
    def out(self) -> Outbound:
        """Every Slack write, checked against ``outbound_allowlist`` and owed in the ledger."""
        return self.make_out()

    @cached_property
    def forge(self) -> GitLab:
        """Each repository's forge (GitLab or GitHub) as the harness's account."""
        return self.make_forge()

    @cached_property
    def jira(self) -> Jira | None:
        """Jira, or None when no ``JIRA_URL`` is configured."""
        return self.make_jira()

    @cached_property
    def runtime(self) -> Runtime:
        """The configured model runtime (``runtime:`` in harness.yaml), metered."""
        return self.make_runtime()
