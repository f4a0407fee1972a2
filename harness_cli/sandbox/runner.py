"""The emulators together, seeded, with the environment that points the harness at them, and
the scenario's production world (MCP servers: logs, metrics, tracker, docs, db).

Used by ``harness sandbox`` (until Ctrl-C), ``harness demo`` (in-process) and tests. The
environment it hands out is the one an operator would set for the real services; nothing in
the harness knows it is talking to an emulator.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_cli.errors import InputError
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.jira_api import SANDBOX_TOKEN as JIRA_TOKEN
from harness_cli.sandbox.jira_api import SANDBOX_USER as JIRA_USER
from harness_cli.sandbox.jira_api import JiraEmulator
from harness_cli.sandbox.pagerduty_api import SANDBOX_TOKEN as PAGERDUTY_TOKEN
from harness_cli.sandbox.pagerduty_api import PagerDutyEmulator
from harness_cli.sandbox.scenarios.sample_repo import (
    SAMPLE_CI_COMMAND,
    SAMPLE_PROJECT_PATH,
    sample_project_files,
    seed_sample_project,
)
from harness_cli.sandbox.slack_api import SlackEmulator
from harness_cli.sandbox.world import knowledge
from harness_cli.sandbox.world.runner import World
from harness_cli.state.store import atomic_write_json, atomic_write_text

if TYPE_CHECKING:
    from harness_cli.sandbox.github_api import GitHubEmulator

# Tokens the sandbox hands out. They look like the real shapes so that the redaction filter
# and the token checks are exercised the same way as in production.
SANDBOX_TOKENS = {
    "SLACK_USER_TOKEN": "xoxp-0000000000-sandbox-operator",
    "SLACK_APP_TOKEN": "xapp-1-A0HARNESS-0000-sandbox",
    "GITLAB_TOKEN": "glpat-sandboxsandbox0000",
    "ANTHROPIC_API_KEY": "sk-ant-sandbox-0000000000",
    "PAGERDUTY_TOKEN": PAGERDUTY_TOKEN,
    "JIRA_USER": JIRA_USER,
    "JIRA_TOKEN": JIRA_TOKEN,
}
GITHUB_SANDBOX_TOKEN = "ghp_sandboxSandboxSandbox000000000000"
"""A classic token shape (``ghp_`` + 36): scopes ``repo, workflow``, as the emulator's default."""


ANTHROPIC_BODY_LOG = "anthropic-requests.jsonl"
"""In the sandbox folder: every Messages request body the emulator answered (JSON lines)."""
MCP_CONFIG = "mcp.json"
"""In the sandbox folder: the ``mcpServers`` file for the world's servers (agent-config's
mcp.json format: copy it there, or point a client at it)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    script: str
    """The model script the Anthropic emulator plays (``sandbox/scripts/<script>.yaml``)."""
    projects: tuple[str, ...] = (SAMPLE_PROJECT_PATH,)
    extra_files: tuple[tuple[str, str], ...] = ()
    """Files added to the sample project (path, content)."""
    jira_seed: Any = knowledge.jira_seed
    """Returns the Jira emulator's ``seed`` body: the incident as the tracker tells it."""


INVOICE_TEST = """from decimal import Decimal

from pricing.discount import line_total


def test_invoice_for_ten_units():
    # pinned from a production invoice in 2025
    assert line_total(Decimal("5.00"), 10) == Decimal("50.00")
"""
"""A test that encoded the bug: fixing the discount turns it red in CI (the demo's red
pipeline, which fix_ci then repairs)."""

SCENARIOS = {
    "default": Scenario(
        "default",
        "#support (C0SUPPORT), the operator's self-DM (D0SELF) and acme/pricing-service, a "
        "small Python repo whose bulk discount has an off-by-one bug and whose CI runs pytest",
        script="demo",
        extra_files=(("tests/test_invoice.py", INVOICE_TEST),),
    ),
}


@dataclass
class Sandbox:
    root: Path
    scenario: Scenario = field(default_factory=lambda: SCENARIOS["default"])
    with_world: bool = False
    """Start the world's MCP servers too (``harness sandbox`` and ``harness demo`` do; tests
    that need only the emulators skip the child process)."""
    slack: SlackEmulator = field(init=False)
    gitlab: GitLabEmulator = field(init=False)
    anthropic: AnthropicEmulator = field(init=False)
    pagerduty: PagerDutyEmulator = field(init=False)
    github_enabled: bool = False
    """Also start the GitHub emulator (``harness sandbox`` does; the demo and most tests do
    not pay for it)."""
    github: GitHubEmulator | None = field(init=False, default=None)
    jira: JiraEmulator = field(init=False)
    world: World | None = field(init=False, default=None)

    def start(self) -> Sandbox:
        self.root.mkdir(parents=True, exist_ok=True)
        self.slack = SlackEmulator()
        self.gitlab = GitLabEmulator(self.root / "gitlab")
        # what the model was shown, request by request (bounded): `demo --keep` leaves it
        self.anthropic = AnthropicEmulator(
            self.scenario.script, body_log=self.root / ANTHROPIC_BODY_LOG
        )
        self.pagerduty = PagerDutyEmulator()
        self.jira = JiraEmulator(deployment="Cloud")
        for emulator in (self.slack, self.gitlab, self.anthropic, self.pagerduty, self.jira):
            emulator.start()
        self.jira.control("seed", self.scenario.jira_seed())
        # team-b's prefixes in the example projects.yaml, so `harness doctor` finds them (#30)
        self.jira.control("seed", {"projects": [{"key": "XX", "name": "team-b web"},
                                                {"key": "YY", "name": "team-b jobs"}]})  # fmt: skip
        # The world's HTTP host starts in a child and gets ready while the rest goes on: the
        # sandbox pays a fork here, never the MCP SDK's import (bench_world_startup.py).
        if self.with_world:
            self.world = World(self.root / "world", self._jira_env()).start()
            self.world.write_mcp_config(self.root / MCP_CONFIG)
        files = {**sample_project_files(), **dict(self.scenario.extra_files)}
        for path in self.scenario.projects:
            seed_sample_project(self.gitlab, path=path, files=files)
        if self.github_enabled:
            # imported here so the demo, which never starts it, does not load its ~20 modules
            from harness_cli.sandbox.github_api import GitHubEmulator

            self.github = GitHubEmulator(self.root / "github")
            self.github.start()
            self.github.control("add_token", {"token": GITHUB_SANDBOX_TOKEN})
            for path in self.scenario.projects:
                body = {"repo": path, "files": files, "ci_command": SAMPLE_CI_COMMAND}
                self.github.control("create_repo", body)
        return self

    def stop(self) -> None:
        if self.world is not None:
            self.world.stop()
        for name in ("github", "jira", "pagerduty", "anthropic", "gitlab", "slack"):
            emulator = getattr(self, name, None)
            if emulator is not None:
                emulator.stop()

    def _jira_env(self) -> dict[str, str]:
        return {"JIRA_URL": self.jira.url, "JIRA_USER": JIRA_USER, "JIRA_TOKEN": JIRA_TOKEN}

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        """What an operator exports to point the harness (and the claude CLI) here."""
        forge: dict[str, str] = {}
        if self.github is not None:
            forge = {"GITHUB_URL": self.github.api_url, "GITHUB_TOKEN": GITHUB_SANDBOX_TOKEN}
        return {
            **forge,
            "SLACK_API_URL": f"{self.slack.url}/api/",
            "GITLAB_URL": self.gitlab.url,
            "ANTHROPIC_BASE_URL": self.anthropic.url,
            "PAGERDUTY_API_URL": self.pagerduty.url,
            "JIRA_URL": self.jira.url,
            **SANDBOX_TOKENS,
            # keep the real claude CLI offline (CLAUDE-CLI-FACTS.md)
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "IS_SANDBOX": "1",
        }

    def write_env_file(self, path: Path) -> Path:
        lines = [f"export {k}={shlex.quote(v)}" for k, v in self.env().items()]
        atomic_write_text(
            path,
            "# source this file to point harness at the sandbox\n" + "\n".join(lines) + "\n",
            verbatim=True,  # it exists to hand out the (fake) tokens
        )
        return path

    def state(self) -> dict[str, Any]:
        """Every emulator's state (``sandbox-state.json``)."""
        return {
            "scenario": self.scenario.name,
            "slack": self.slack.snapshot(),
            "gitlab": self.gitlab.snapshot(),
            "anthropic": self.anthropic.snapshot(),
            "pagerduty": self.pagerduty.snapshot(),
            **({"github": self.github.snapshot()} if self.github is not None else {}),
            "jira": self.jira.snapshot(),
            "world": self.world.snapshot() if self.world is not None else None,
        }

    def write_state(self, path: Path) -> Path:
        atomic_write_json(path, self.state())
        return path


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Point this process at the sandbox (the demo and the benchmarks run the CLI in-process);
    the previous values come back afterwards."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise InputError(
            f"unknown sandbox scenario {name!r}", hint=f"one of: {', '.join(SCENARIOS)}"
        ) from None


def describe(sandbox: Sandbox) -> str:
    return json.dumps({"scenario": sandbox.scenario.name, "env": sandbox.env()}, indent=2)
