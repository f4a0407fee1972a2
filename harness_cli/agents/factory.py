"""Build the runtime by name: ``HARNESS_RUNTIME`` wins over harness.yaml's ``runtime``."""

from __future__ import annotations

import os

from harness_cli.agents.runtime import Runtime
from harness_cli.bounds import InputBounds
from harness_cli.errors import ConfigError

RUNTIMES = ("claude-code", "anthropic")


def runtime_name(configured: str | None = None) -> str:
    """``HARNESS_RUNTIME``, else the configured name, else ``claude-code``."""
    return os.environ.get("HARNESS_RUNTIME") or configured or "claude-code"


def build_runtime(
    name: str | None = None, *, model: str | None = None, inputs: InputBounds | None = None
) -> Runtime:
    """The runtime called ``name`` (default: ``runtime_name()``). Neither the claude binary
    nor the anthropic SDK is touched here: each is looked up or imported when a run starts."""
    chosen = name or runtime_name()
    if chosen == "claude-code":
        from harness_cli.agents.claude_code import ClaudeCodeRuntime

        return ClaudeCodeRuntime(model=model)
    if chosen == "anthropic":
        from harness_cli.agents.anthropic_loop import DEFAULT_MODEL, AnthropicRuntime

        bounds = inputs or InputBounds()
        return AnthropicRuntime(
            model=model or DEFAULT_MODEL, tool_result_chars=bounds.tool_result_chars
        )
    raise ConfigError(
        f"unknown runtime {chosen!r}",
        hint=f"set HARNESS_RUNTIME or harness.yaml `runtime` to one of: {', '.join(RUNTIMES)}",
    )
