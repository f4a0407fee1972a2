"""agent-config/: ``harness.yaml``, ``projects.yaml`` and ``mcp.json`` as pydantic models.

Operators edit these files by hand, so the models forbid unknown keys (a typo is an error, not
a silently ignored setting) and every error names the file, the line, the field and the fix.
``resolve_project()`` routes a signal: Jira prefix, then Slack channel, then the default.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from harness_cli import paths
from harness_cli.agents.mcp_settings import McpSettings
from harness_cli.agents.sandbox_settings import SandboxSettings
from harness_cli.bounds import InputBounds
from harness_cli.cost.prices import CostSettings
from harness_cli.delivery.monitor.thresholds import MonitorThresholds
from harness_cli.delivery.thresholds import DeliveryThresholds
from harness_cli.dispatch.settings import CiDispatchSettings
from harness_cli.errors import ConfigError
from harness_cli.improvement.thresholds import ImprovementThresholds
from harness_cli.intake.thresholds import IntakeRate
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.loop.outage_thresholds import OutageThresholds
from harness_cli.memory.thresholds import MemoryThresholds
from harness_cli.outbox.thresholds import ObligationThresholds
from harness_cli.sessions.policy import SessionsPolicy

M = TypeVar("M", bound=BaseModel)


class _Human(BaseModel):
    model_config = ConfigDict(extra="forbid")


CONFIG_SCHEMA_VERSION = 1
"""The newest ``schema_version`` of harness.yaml and projects.yaml this harness understands. A
file written for a newer harness is refused (exit 2), never half-understood."""


def _known_schema(version: int) -> int:
    if version > CONFIG_SCHEMA_VERSION:
        raise ValueError(
            f"schema_version {version} is newer than this harness ({CONFIG_SCHEMA_VERSION})"
        )
    return version


class Operator(_Human):
    slack_user_id: str
    """Only this user's ``admin: …`` messages are obeyed."""
    self_dm_channel: str
    """The operator's self-DM: admin commands in, case threads out."""
    name: str = "operator"


class Thresholds(_Human):
    """The numbers behind the reference's rules. Each rule reads its number from here and
    nowhere else; the code that applies it quotes the rule in its docstring."""

    git_push_attempts: int = Field(3, ge=1)
    """Workspace sync: a rejected push is fetched, rebased and retried this many times."""
    stale_index_lock_seconds: float = Field(60.0, gt=0)
    """A ``.git/index.lock`` older than this, with our workspace lock held, is a crash leftover."""
    dedup_ttl_hours: float = Field(72.0, gt=0)
    """socket-dedup: a done message is remembered at least this long, and for as long as any
    cursor or live thread can still read it again (the frozen cursor re-reads the newest
    message of a quiet channel for days)."""
    dedup_max_entries: int = Field(20000, ge=100)
    """socket-dedup: the set is bounded; what no cursor can read again goes first."""
    intake_lease_seconds: float = Field(600.0, gt=0)
    """A message claimed by a run that is still alive is taken over after this long (a hung
    run); one claimed by a dead run is taken over by the next cycle at once."""
    intake_max_attempts: int = Field(5, ge=1)
    """A message whose handling failed this many times is parked and the operator told, so one
    poisoned message cannot be retried every minute for ever."""
    poll_thread_budget: int = Field(50, ge=0)
    """Thread polls (``conversations.replies``, Slack Tier 3: "50+" a minute) one poll-slack
    cycle makes at most; the next cycle starts where this one stopped, so every live thread is
    polled within ``live threads / budget`` cycles. 0: no cap (a 429 still ends the cycle)."""
    thread_gone_confirmations: int = Field(3, ge=1)
    """reference: "evicts a cursor automatically when the upstream API answers
    thread_not_found". Slack also answers it for a parent still lagging and now and then for
    nothing: a thread whose parent is gone from history is evicted at once (unless younger than
    ``read_lag_window_seconds``); one whose parent still shows only after this many answers in
    a row across cycles."""
    admin_thread_hours: float = Field(24.0, ge=0)
    """The thread under an admin command is read this long, so a command typed as a reply
    under the harness's answer is obeyed."""
    finalize_idle_hours: float = Field(4.0, gt=0)
    """finalize: a case idle this long rolls its gap reports into one MR."""
    lock_timeout_seconds: float = Field(30.0, gt=0)
    """How long a read-modify-write waits for a state-file lock before giving up."""
    mcp_disconnect_confirm: int = Field(2, ge=1)
    """mcp-watch: "After two consecutive disconnects (the DISCONNECT_CONFIRM_THRESHOLD), it
    escalates with a :warning: reaction on the most recent ticket"."""
    read_lag_window_seconds: float = Field(60.0, ge=0)
    """Slack's conversations.history "can lag by anywhere from 1 to 30 seconds": a channel
    cursor never moves closer than this to the newest message seen, and on an empty poll it
    does not move at all; the dedup set filters the repeats."""
    first_poll_lookback_minutes: float = Field(60.0, ge=0)
    """A channel polled for the first time starts this far back (not from the beginning)."""
    poll_cycle_budget_seconds: float = Field(30.0, gt=0)
    """One poll-slack cycle honours 429 Retry-After only while it fits in this budget; past it
    the cycle ends cleanly with the cursors where they were."""


class HarnessConfig(_Human):
    schema_version: int = Field(CONFIG_SCHEMA_VERSION, ge=1)
    _schema = field_validator("schema_version")(_known_schema)
    operator: Operator
    outbound_allowlist: list[str] | None = None
    """The only channels the harness may post to. Default: the operator's self-DM only."""
    auto_monitor: bool = True
    """New tickets start an investigation by themselves (``oncall-toggle`` flips it)."""
    dispatch: (
        Literal["systemd", "local", "inline", "record", "gitlab-ci", "github-actions"] | None
    ) = None
    """Overridden by ``HARNESS_DISPATCH``. Default: systemd if available, else local."""
    runtime: Literal["claude-code", "anthropic"] | None = None
    """Overridden by ``HARNESS_RUNTIME``. Unset: ``claude-code`` when the claude CLI is installed,
    else ``anthropic`` (with one warning line saying so)."""
    model: str = "claude-sonnet-4-6"
    sops_dir: str = "../sops"
    """Where the SOPs and knowledge bases live, relative to this config folder."""
    thresholds: Thresholds = Field(default_factory=Thresholds)
    investigation: InvestigationThresholds = Field(default_factory=InvestigationThresholds)
    model_outage: OutageThresholds = Field(default_factory=OutageThresholds)
    """How long a model call waits out 429/5xx/529s, and how often a waiting case is retried."""
    """The on-call loop's confidence bars, ceilings and budgets (gates, force rules, exits)."""
    delivery: DeliveryThresholds = Field(default_factory=DeliveryThresholds)
    """Where worktrees live; the L2 push self-heal budget and confidence gate."""
    monitor: MonitorThresholds = Field(default_factory=MonitorThresholds)
    """mr-monitor's budgets: consecutive fix_ci attempts, the cycle budget."""
    memory: MemoryThresholds = Field(default_factory=MemoryThresholds)
    """followup, the gap analyzer and consolidation (the 50 % output-size guard …)."""
    improvement: ImprovementThresholds = Field(default_factory=ImprovementThresholds)
    """finalize's filters and the harness's own repo; kb-update's 10 / 3 / 6."""
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """The box the agents' commands run in (bubblewrap); fail closed unless opted out."""
    ci_dispatch: CiDispatchSettings = Field(default_factory=CiDispatchSettings)
    """``dispatch: gitlab-ci``: the harness project whose pipelines run the workflows."""
    sessions: SessionsPolicy = Field(default_factory=SessionsPolicy)
    """Work sessions and reservations (004): heartbeat, expiry, approval TTL, per-workflow
    exclusivity."""
    inputs: InputBounds = Field(default_factory=InputBounds)
    """How much third-party text (ticket, replies, CI logs, tool results) a prompt takes."""
    cost: CostSettings = Field(default_factory=CostSettings)
    """The price table every model call is priced with, and the budgets (per case, per
    workflow run, per day) that end a run at its next safe point."""
    obligations: ObligationThresholds = Field(default_factory=ObligationThresholds)
    """The outbox (owed posts and notes) and the resumption of killed workflow runs."""
    intake_rate: IntakeRate = Field(default_factory=IntakeRate)
    """Flood control: tickets per user and per channel in a window; the rest of a burst is
    folded into one case with one DM (``intake/flood.py``)."""
    mcp: McpSettings = Field(default_factory=McpSettings)
    """What the harness believes about the MCP servers of mcp.json (CONTRACT §3): the
    servers whose annotations are trusted, each tool's declared effect, the roles that may
    write through MCP, the call timeout (``agents/mcp_contracts.py``)."""
    max_running_workflows: int = Field(4, ge=1)
    """Workflows running at once on this machine with local or systemd dispatch; the rest wait
    in order in ``$HARNESS_HOME/run-queue.json`` (``run_slots.py``)."""

    @property
    def allowlist(self) -> list[str]:
        if self.outbound_allowlist is None:
            return [self.operator.self_dm_channel]
        return self.outbound_allowlist


class Project(_Human):
    sop: str
    kb: str
    dfr_threads_dir: str = ""
    task_dir: str = "task-workspaces"
    slack_channels: list[str] = Field(default_factory=list)
    jira_prefixes: list[str] = Field(default_factory=list)
    repos: list[str] = Field(default_factory=list)
    """Repositories this project's fixes go to: GitLab project paths, or GitHub ``owner/name``
    with ``forge: github``."""
    forge: Literal["gitlab", "github"] = "gitlab"
    """Where ``repos`` live (services/forge.py): GitLab (``GITLAB_URL``/``GITLAB_TOKEN``) or
    GitHub (``GITHUB_URL``/``GITHUB_TOKEN``)."""
    required_checks: list[str] = Field(default_factory=lambda: ["python -m pytest -q"])
    """Commands the harness itself runs in the worktree before an MR may be marked ready
    (fail-closed acceptance); the agent cannot declare its own success."""
    auto_monitor: bool | None = None
    """Per-project override of harness.yaml's ``auto_monitor``."""
    agent_network: list[str] = Field(default_factory=list)
    """Domains the agent's commands may reach while working on this project's code (e.g.
    ``pypi.org``); empty: no network. The claude CLI's sandbox filters by domain; the
    harness's own tool loop can only open the whole network, which any entry does."""
    evidence_paths: list[str] = Field(default_factory=list)
    """Folders the investigator may read (read-only) besides its case folder: logs, a local
    checkout of the project's repos. ``~`` is expanded; outside them everything is refused."""


class ProjectsConfig(_Human):
    schema_version: int = Field(CONFIG_SCHEMA_VERSION, ge=1)
    _schema = field_validator("schema_version")(_known_schema)
    default_project: str
    projects: dict[str, Project]

    @model_validator(mode="after")
    def _consistent(self) -> ProjectsConfig:
        if self.default_project not in self.projects:
            raise ValueError(
                f"default_project {self.default_project!r} is not one of the projects "
                f"({', '.join(self.projects) or 'none defined'})"
            )
        for attr in ("slack_channels", "jira_prefixes"):
            owner: dict[str, str] = {}
            for name, project in self.projects.items():
                for value in getattr(project, attr):
                    if value in owner:
                        raise ValueError(
                            f"{attr[:-1].replace('_', ' ')} {value!r} is claimed by both "
                            f"{owner[value]!r} and {name!r}; routing must be unambiguous"
                        )
                    owner[value] = name
        return self


class McpServer(_Human):
    type: Literal["stdio", "http", "sse"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    headersHelper: str | None = None
    """The claude CLI's hook: a shell command whose stdout is a JSON object of extra headers,
    run at each connection (how a refreshed token reaches the request). ``${VAR}`` and
    ``${VAR:-default}`` are expanded in ``command``, ``args``, ``env``, ``url`` and ``headers``."""
    # -- mcp-watch (the claude CLI ignores keys it does not know) --
    noop_tool: str | None = None
    """A tool safe to call every 10 minutes (read-only, cheap). None: initialize and list the
    tools only, which misses a token that is only checked when a tool runs."""
    noop_args: dict[str, Any] = Field(default_factory=dict)
    """Arguments of ``noop_tool``."""
    refresh_command: str | None = None
    """The silent token refresh, run (``sh -c``) when the check fails. Exit 0: refreshed, the
    check runs again at once; exit 77: the identity-provider session itself expired and only a
    human can renew it (the DM carries ``runbook``); anything else: the refresh failed."""
    runbook: str = ""
    """The fix the reauth DM carries: the 30-second runbook for the step that needs a human
    (e.g. an SSO login with a hardware key). The harness never automates that step."""
    project: str | None = None
    """The project whose most recent ticket gets the :warning: once the server has failed
    DISCONNECT_CONFIRM_THRESHOLD checks in a row. None: the most recent ticket of any project."""

    @model_validator(mode="after")
    def _transport(self) -> McpServer:
        if not self.command and not self.url:
            raise ValueError("give either command (stdio) or url (http/sse)")
        return self


class McpConfig(_Human):
    mcpServers: dict[str, McpServer] = Field(default_factory=dict)


@dataclass(frozen=True)
class Config:
    dir: Path
    harness: HarnessConfig
    projects: ProjectsConfig
    mcp: McpConfig

    @property
    def mcp_file(self) -> Path | None:
        """agent-config/mcp.json when it lists a server: the catalog every investigation,
        followup and dev-agent run is given (``--mcp-config``, or the harness's own client)."""
        path = self.dir / "mcp.json"
        return path if path.exists() and self.mcp.mcpServers else None


def load_config(directory: Path | None = None) -> Config:
    """Load and validate the whole agent-config folder; the first problem raises ConfigError."""
    directory = directory or paths.config_dir()
    if not directory.is_dir():
        raise ConfigError(
            f"config folder {directory} not found",
            hint="run `harness init` or point HARNESS_CONFIG at an agent-config folder",
        )
    mcp_path = directory / "mcp.json"
    return Config(
        dir=directory,
        harness=load_yaml_model(directory / "harness.yaml", HarnessConfig),
        projects=load_yaml_model(directory / "projects.yaml", ProjectsConfig),
        mcp=load_json_model(mcp_path, McpConfig) if mcp_path.exists() else McpConfig(),
    )


def load_yaml_model(path: Path, model: type[M]) -> M:
    try:
        text = _read_utf8(path)
    except FileNotFoundError:
        raise ConfigError(
            f"{path} not found", hint="run `harness init` or copy the example agent-config/"
        ) from None
    try:
        data = _parsed(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(
            f"{where}: broken YAML: {problem}", hint="fix the indentation or quoting there"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _explain(path, exc, yaml.compose(text, Loader=_LOADER)) from None


_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when present: the same safe subset as ``yaml.safe_load``, ~10x faster
(every subcommand loads the config several times; an eval trial runs several subcommands)."""
_PARSED: dict[str, Any] = {}


def _parsed(text: str) -> Any:
    """``text`` parsed, remembered by its content (never stale: a changed file is new text);
    each caller gets its own copy, so no caller's edit leaks into another's config."""
    if text not in _PARSED:
        if len(_PARSED) > 64:
            _PARSED.clear()
        _PARSED[text] = yaml.load(text, Loader=_LOADER)
    return copy.deepcopy(_PARSED[text])


def _read_utf8(path: Path) -> str:
    """The file as text; a byte that is not UTF-8 (a Latin-1 editor's é) is bad input named by
    its line, not a crash."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}:{line}: byte 0x{raw[exc.start]:02x} is not UTF-8",
            hint="save the file as UTF-8 (or retype the character on that line)",
        ) from None


def load_json_model(path: Path, model: type[M]) -> M:
    try:
        data = json.loads(_read_utf8(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: broken JSON: {exc.msg}") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _explain(path, exc, None) from None


def _explain(path: Path, exc: ValidationError, root: yaml.Node | None) -> ConfigError:
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    field = ".".join(loc) or "(top level)"
    line = _line_of(root, loc) if root is not None else None
    where = f"{path}:{line}" if line else str(path)
    kind = err["type"]
    if kind == "missing":
        hint = f"add `{loc[-1]}:` there"
    elif kind == "extra_forbidden":
        hint = "unknown key (a typo?); remove it or check the spelling against the docs"
    elif loc == ["schema_version"] and "newer" in err["msg"]:
        hint = "the file was written for a newer harness: upgrade harness on this machine"
    else:
        hint = f"got {err.get('input')!r}"
    more = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return ConfigError(f"{where}: {field}: {err['msg']}{more}", hint=hint)


def _line_of(node: yaml.Node | None, loc: list[str]) -> int | None:
    """1-based line of the deepest YAML node on the error's path (the parent for a missing key)."""
    line = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if str(k.value) == key), None)
            if match is None:
                key_node = next((k for k, _ in node.value if str(k.value) == key), None)
                return key_node.start_mark.line + 1 if key_node else line
            node = match
        elif isinstance(node, yaml.SequenceNode) and key.isdigit() and int(key) < len(node.value):
            node = node.value[int(key)]
        else:
            break
        line = node.start_mark.line + 1
    return line


# -- routing --------------------------------------------------------------------------------

_JIRA_KEY = re.compile(r"(?<![A-Za-z0-9])([A-Z][A-Z0-9]{1,9})-([1-9][0-9]{0,6})(?![0-9])")


def extract_jira_key(text: str, prefixes: list[str] | None = None) -> str | None:
    """The first Jira key in ``text`` (e.g. ``AAA-123``, also inside a browse URL). With
    ``prefixes``, only keys of those projects count — so "UTF-8" or "SHA-256" never match."""
    for match in _JIRA_KEY.finditer(text or ""):
        if prefixes is None or match.group(1) in prefixes:
            return f"{match.group(1)}-{match.group(2)}"
    return None


def all_jira_prefixes(projects: ProjectsConfig) -> list[str]:
    return [p for project in projects.projects.values() for p in project.jira_prefixes]


def resolve_project(
    projects: ProjectsConfig, *, jira_key: str | None = None, channel: str | None = None
) -> str:
    """The reference's routing rule: "Jira prefix first, then Slack channel, then the default"."""
    if jira_key:
        prefix = jira_key.split("-", 1)[0]
        for name, project in projects.projects.items():
            if prefix in project.jira_prefixes:
                return name
    if channel:
        for name, project in projects.projects.items():
            if channel in project.slack_channels:
                return name
    return projects.default_project


def to_jsonable(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
