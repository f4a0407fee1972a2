"""The contract of every MCP tool: its effect and who may be offered it (seed 003: effect,
retry safety, timeout, permission), decided from the operator's config and nothing else.

harness.yaml ``mcp:`` (``mcp_settings.McpSettings``) names the trusted servers, the declared
effects and the write roles.

The MCP specification: "clients MUST consider tool annotations to be untrusted unless they
come from trusted servers". So a server's ``readOnlyHint`` counts only for a server in
``trusted``; an untrusted tool nobody declared is treated as a write: never offered to an
investigation, offered to a role in ``write_roles`` only. Slack's write tools are denied on
every server, whatever the config says ("Slack write tools are blocked in every pipeline
invocation"); reviewers get no MCP at all (their isolation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness_cli.agents.mcp_settings import McpEffect, McpSettings
from harness_cli.agents.policy import SLACK_WRITE_TOOLS, role

PREFIX = "mcp__"

NO_MCP_SCOPES = ("staged",)
"""A reviewer (its scope is its staged folder) sees what it is shown and nothing else."""


@dataclass(frozen=True)
class ToolPolicy:
    """What the catalog decided about one tool."""

    server: str
    tool: str
    effect: McpEffect
    why: str
    """``declared`` (harness.yaml effects), ``annotation`` (a trusted server's hint),
    ``untrusted`` (no declaration, annotations ignored) or ``slack-write``."""
    denied: bool = False
    """Never offered, to any role (a Slack write tool)."""

    @property
    def name(self) -> str:
        return tool_name(self.server, self.tool)


def tool_name(server: str, tool: str) -> str:
    return f"{PREFIX}{server}__{tool}"


def split_name(name: str) -> tuple[str, str] | None:
    """``mcp__server__tool`` → (server, tool); None for any other name."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None


def effect_of(server: str, tool: str, annotations: Any, settings: McpSettings) -> ToolPolicy:
    """The effect of ``server``'s ``tool``: a Slack write tool is denied; the operator's
    declaration wins; a trusted server's annotations come next; anything else is a write."""
    if tool in SLACK_WRITE_TOOLS:
        return ToolPolicy(server, tool, "writes", "slack-write", denied=True)
    declared = settings.effects.get(f"{server}/{tool}") or settings.effects.get(f"{server}/*")
    if declared is not None:
        return ToolPolicy(server, tool, declared, "declared")
    if server in settings.trusted and annotations is not None:
        if _hint(annotations, "readOnlyHint") is True:
            return ToolPolicy(server, tool, "read-only", "annotation")
        external = _hint(annotations, "openWorldHint") is not False
        return ToolPolicy(server, tool, "external" if external else "writes", "annotation")
    return ToolPolicy(server, tool, "writes", "untrusted")


def _hint(annotations: Any, name: str) -> Any:
    if isinstance(annotations, dict):
        return annotations.get(name)
    return getattr(annotations, name, None)


def role_gets_mcp(role_name: str) -> bool:
    return role(role_name).scope not in NO_MCP_SCOPES


def offered_to(policy_: ToolPolicy, role_name: str, settings: McpSettings) -> bool:
    """May ``role_name`` be offered this tool? Read-only tools: every role with MCP. Writes
    and external effects: only the roles the operator lists in ``write_roles``."""
    if policy_.denied or not role_gets_mcp(role_name):
        return False
    return policy_.effect == "read-only" or role_name in settings.write_roles
