"""harness.yaml ``mcp:``, alone: config reads it without importing the contracts that apply it
(``agents/mcp_contracts.py``), which sit on the kernel floor above config (#29: config imports
only leaf settings modules).

CONTRACT §3; the names ``trusted`` and ``effects`` are fixed::

    mcp:
      trusted: [obs]                  # servers whose own tool annotations are believed
      effects:                        # the operator's word, over any annotation
        obs/search_logs: read-only    # read-only | writes | external; "obs/*" for a server
      write_roles: [dev-agent]        # roles that may be offered writes/external MCP tools
      timeout_s: 60                   # one MCP call's wall clock
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

McpEffect = Literal["read-only", "writes", "external"]


class McpSettings(BaseModel):
    """harness.yaml ``mcp:``."""

    model_config = ConfigDict(extra="forbid")

    trusted: list[str] = Field(default_factory=list)
    """Servers whose own annotations (``readOnlyHint``…) are believed."""
    effects: dict[str, McpEffect] = Field(default_factory=dict)
    """``server/tool`` (or ``server/*``) → effect; wins over any annotation."""
    write_roles: list[str] = Field(default_factory=list)
    """Roles offered MCP tools whose effect is ``writes`` or ``external`` (default: none)."""
    timeout_s: float = Field(60.0, gt=0)
    """One MCP call's wall clock; a call past it is a tool error and the run goes on."""
    start_timeout_s: float = Field(30.0, gt=0)
    """A server's start (connect, initialize, list tools); one that misses it is left out of
    the run's catalog and named in the log."""
