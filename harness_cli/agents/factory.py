"""Build the runtime by name: ``HARNESS_RUNTIME`` wins over harness.yaml's ``runtime``."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from harness_cli import dryrun, paths
from harness_cli.agents.claude_code import ClaudeCodeRuntime
from harness_cli.agents.mcp_settings import McpSettings
from harness_cli.agents.metered import MeteredRuntime
from harness_cli.agents.sandbox_settings import SandboxSettings
from harness_cli.bounds import InputBounds
from harness_cli.errors import ConfigError
from harness_cli.services.claude_cli import find_claude
from harness_cli.services.runtime import Runtime

if TYPE_CHECKING:
    from harness_cli.config import Config

RUNTIMES = ("claude-code", "anthropic")
log = logging.getLogger("harness.agents")
_warned: list[bool] = []


def runtime_name(configured: str | None = None) -> str:
    """``HARNESS_RUNTIME``, else the configured name, else ``claude-code`` when the claude CLI
    is installed and ``anthropic`` (said once per process) when it is not: a pip-installed
    harness without the CLI still runs."""
    chosen = os.environ.get("HARNESS_RUNTIME") or configured
    if chosen:
        return chosen

    if find_claude() is not None:
        return "claude-code"
    if not _warned:
        _warned.append(True)
        log.warning(
            "claude CLI not found (PATH, HARNESS_CLAUDE_BIN, .tools/): using the anthropic "
            "runtime; `harness doctor` says how to install the CLI, `runtime: anthropic` in "
            "harness.yaml makes this the choice"
        )
    return "anthropic"


def build_runtime(
    name: str | None = None,
    *,
    model: str | None = None,
    sandbox: SandboxSettings | None = None,
    inputs: InputBounds | None = None,
    worktrees: Path | None = None,
    mcp: McpSettings | None = None,
) -> Runtime:
    """The runtime called ``name`` (default: ``runtime_name()``). Neither the claude binary
    nor the anthropic SDK is touched here: each is looked up or imported when a run starts.
    ``sandbox``: harness.yaml's ``sandbox:`` (default: required); ``inputs``: its ``inputs:``
    bounds (the size of one tool result in the next request); ``worktrees``: the
    configured worktrees' folder, outside every run."""

    if dryrun.ACTIVE is not None:  # --dry-run: the first model call ends the run
        return dryrun.StoppingRuntime()
    chosen = name or runtime_name()
    if chosen == "claude-code":
        return ClaudeCodeRuntime(
            model=model, sandbox_settings=sandbox, worktrees=worktrees, mcp_settings=mcp
        )
    if chosen == "anthropic":
        from harness_cli.agents.anthropic_loop import DEFAULT_MODEL, AnthropicRuntime

        return AnthropicRuntime(
            model=model or DEFAULT_MODEL,
            sandbox_settings=sandbox,
            worktrees=worktrees,
            tool_result_chars=(inputs or InputBounds()).tool_result_chars,
            mcp_settings=mcp,
            mcp_result_bytes=(inputs or InputBounds()).mcp_result_bytes,
        )
    raise ConfigError(
        f"unknown runtime {chosen!r}",
        hint=f"set HARNESS_RUNTIME or harness.yaml `runtime` to one of: {', '.join(RUNTIMES)}",
    )


CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Either one lets a run reach the model (the claude CLI may also use its own login)."""


def credentials_problem(cfg: Config) -> ConfigError | None:
    """What keeps the configured runtime from reaching the model, if anything: no
    ``ANTHROPIC_API_KEY``/``ANTHROPIC_AUTH_TOKEN`` (the claude CLI may use its own login,
    ``claude /login``, instead). A dry run stops before the first model call: nothing."""

    if dryrun.ACTIVE is not None or any(os.environ.get(k) for k in CREDENTIALS):
        return None
    chosen = runtime_name(cfg.harness.runtime)
    if chosen == "claude-code":
        folder = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
        if os.path.exists(os.path.join(folder, ".credentials.json")):
            return None

    return ConfigError(
        f"ANTHROPIC_API_KEY is not set: the {chosen} runtime cannot reach the model, so nothing "
        "was started",
        hint=f"add ANTHROPIC_API_KEY=… to {paths.env_file()} (or export it), then run it again",
    )


def require_credentials(cfg: Config) -> None:
    """Refuse (exit 2) before a workflow changes its case when its runtime cannot reach the
    model: a run that starts anyway ends ``failed`` after it has moved the case (#34 item 5)."""
    problem = credentials_problem(cfg)
    if problem is not None:
        raise problem


def configured_runtime(cfg: Config) -> Runtime:
    """The runtime harness.yaml asks for (``HARNESS_RUNTIME`` still wins), with its model, its
    sandbox and its input bounds, metered (``agents/metered.py``): the one way a workflow builds its
    runtime."""

    inner = build_runtime(
        runtime_name(cfg.harness.runtime),
        model=cfg.harness.model,
        sandbox=cfg.harness.sandbox,
        inputs=cfg.harness.inputs,
        worktrees=cfg.harness.delivery.root(),
        mcp=cfg.harness.mcp,
    )
    # Every workflow's runtime comes from here: the one place each model call is metered
    # and each budget checked (harness_cli/cost).
    return MeteredRuntime(inner, cfg.harness.cost, cfg.harness.model)
