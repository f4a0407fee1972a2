"""What every agent run may do, in one place: the roles, what each may read, whether it gets a
shell, the tools no run is ever offered, and the folders outside every role.

The reference: "The investigation pipeline explicitly bans Bash"; "Slack write tools are
blocked in every pipeline invocation" — all outbound text goes through the harness. #21 adds:
each role reads only its own roots, enforced by the runtime, never by the prompt. The runtimes
call ``disallowed_tools`` and ``readable_roots`` for every request, so a workflow that forgets a
rule (#14 p13: the dev-agent, push-heal and patch-suggester runs) still gets it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness_cli import paths
from harness_cli.delivery.thresholds import DeliveryThresholds  # a settings leaf: pydantic only
from harness_cli.services.runtime import RunRequest

Scope = Literal["case", "case+evidence", "staged", "worktree"]

SLACK_WRITE_TOOLS = (
    "send_message_to_self",
    "edit_message_to_self",
    "send_message",
    "post_message",
    "chat_postMessage",
    "update_message",
    "edit_message",
    "delete_message",
    "add_reaction",
    "reply_to_thread",
)
"""Names of the write tools Slack MCP servers offer. Denied on every configured server (a
server's name says nothing about what it wraps); a deny rule wins over any allow."""


BUILTIN_TOOLS = ("Read", "Glob", "Grep", "Write", "Edit", "Bash")
"""The built-in tools an agent run may be offered, the same on both runtimes: the harness's own
loop implements exactly these (``agents.tools.TOOLS``), the claude CLI gets only these
(``--tools``) — minus what ``disallowed_tools`` removes for the run."""


@dataclass(frozen=True)
class Role:
    bash: bool
    """Offered the shell. Only the roles that change code in their own worktree are."""
    scope: Scope
    """What ``workdir`` is and what else it may read: ``case`` its case folder; ``case+evidence``
    plus the project's evidence paths (read-only); ``staged`` a reviewer's staged folder only;
    ``worktree`` its case's worktree."""


ROLES: dict[str, Role] = {
    "investigator": Role(bash=False, scope="case+evidence"),
    "precommit": Role(bash=False, scope="case"),
    "adversarial-reviewer": Role(bash=False, scope="staged"),
    "red-team": Role(bash=False, scope="staged"),
    "followup": Role(bash=False, scope="case"),
    "gap-analyzer": Role(bash=False, scope="case"),
    "consolidator": Role(bash=False, scope="case"),
    "dev-agent-plan": Role(bash=True, scope="worktree"),
    "dev-agent": Role(bash=True, scope="worktree"),
    "push-healer-plan": Role(bash=False, scope="worktree"),
    "push-healer": Role(bash=True, scope="worktree"),
    "patch-suggester": Role(bash=True, scope="worktree"),
}
"""Every agent role. A role not listed gets no shell and only its workdir (fail closed)."""
UNKNOWN = Role(bash=False, scope="case")


def role(name: str) -> Role:
    return ROLES.get(name, UNKNOWN)


def mcp_servers(config: Path | None) -> list[str]:
    """The server names of an ``mcpServers`` file (none when it is missing or unreadable)."""
    if config is None:
        return []
    try:
        servers = json.loads(config.read_text(encoding="utf-8")).get("mcpServers", {})
    except (OSError, ValueError, AttributeError):
        return []
    return [str(name) for name in servers] if isinstance(servers, dict) else []


def slack_write_tools(servers: list[str]) -> list[str]:
    return [f"mcp__{server}__{tool}" for server in servers for tool in SLACK_WRITE_TOOLS]


def disallowed_tools(req: RunRequest) -> tuple[str, ...]:
    """The ONE deny list: what the caller asked, the Slack write tools of every MCP server the
    run can reach, and the shell for every role without one."""
    denied = list(req.disallowed_tools)
    denied += slack_write_tools(mcp_servers(req.mcp_config))
    if not role(req.role).bash:
        denied.append("Bash")
    return tuple(dict.fromkeys(denied))


def offered_tools(req: RunRequest) -> tuple[str, ...]:
    """The built-in tools this run is offered (MCP servers' tools come on top)."""
    denied = set(disallowed_tools(req))
    return tuple(t for t in BUILTIN_TOOLS if t not in denied)


def shell_allowed(req: RunRequest) -> bool:
    return "Bash" not in disallowed_tools(req)


def read_roots_for(name: str, evidence: tuple[Path, ...] = ()) -> tuple[Path, ...]:
    """The ``read_roots`` a role gets besides its workdir: the project's evidence paths for
    the investigator, nothing for every other role."""
    return tuple(evidence) if role(name).scope == "case+evidence" else ()


def readable_roots(req: RunRequest) -> tuple[Path, ...]:
    """Where the run may read: its workdir, its writable folder and its ``read_roots``."""
    roots = (req.workdir, req.allowed_root, *req.read_roots)
    return tuple(dict.fromkeys(Path(os.path.realpath(r)) for r in roots))


def forbidden_roots(worktrees: Path) -> tuple[Path, ...]:
    """Outside every role, whatever a caller passes: the harness's own state and config, the
    env file with the tokens, the workspace (other cases), the worktrees (other cases' code and
    the mirrors) and the operator's keys. A run's own roots may lie inside one of them (a case
    folder in the workspace); everything else there stays refused. The claude CLI's config
    folder too: it holds the transcripts of every case's runs (and the operator's own). And
    the workspace's ``control/`` by name (#28 R4): the harness's decisions, which a case
    folder's run must not even read as if they were its own. ``worktrees``: where this
    harness keeps them (the configured ``delivery.worktree_root``, #29), never a default."""
    home = Path.home()
    claude = os.environ.get("CLAUDE_CONFIG_DIR")
    found = [
        paths.home(),
        paths.home() / "env",
        paths.config_dir(),
        paths.workspace(),
        paths.control_root(),
        worktrees,
        home / ".ssh",
        home / ".netrc",
        home / ".git-credentials",
        home / ".config",
        home / ".aws",
        home / ".gnupg",
        Path(claude).expanduser() if claude else home / ".claude",
    ]
    return tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in found))


def default_worktrees() -> Path:
    """The worktrees' folder of a runtime built without a config (tests, the eval's own
    runs): ``HARNESS_WORKTREES`` or the default ``delivery.worktree_root``. A workflow's runtime
    is given the configured one (``factory.configured_runtime``)."""
    return DeliveryThresholds().root()


def is_readable(path: Path, roots: tuple[Path, ...]) -> bool:
    """``path`` (symlinks resolved) lies inside one of ``roots``."""
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(root) for root in roots)
