"""One model call of a memory agent (followup, gap-analyzer, consolidator), whatever the
runtime, with the accounting of ``loop.runs.CaseRunner`` and a stricter boundary: these
agents read the case folder and never write anywhere. Their answer is text; the harness decides
what of it reaches disk or Slack ("the harness, not the agent, writes it").

No file is snapshotted and put back here, unlike an investigation: a consolidation or a
re-investigation may legitimately write the same case folder during a followup, and a revert
would undo their work. The write tools are simply never offered.
"""

from __future__ import annotations

from pathlib import Path

from harness_cli.agents import policy
from harness_cli.config import Config
from harness_cli.investigation.loop import cache_prefix
from harness_cli.loop.runs import CaseRunner
from harness_cli.memory.thresholds import MemoryThresholds
from harness_cli.services.runtime import Runtime

WRITE_TOOLS = ("Bash", "Write", "Edit", "MultiEdit", "NotebookEdit")


def read_only_disallowed(cfg: Config) -> tuple[str, ...]:
    """Every tool that changes something: files, the shell, and Slack writes ("all outbound
    text goes through the harness")."""
    return (*WRITE_TOOLS, *policy.slack_write_tools(list(cfg.mcp.mcpServers)))


MemoryRunner = CaseRunner
"""The investigation's runner with a read-only tool policy and no guard (see ``build``)."""


def build(
    cfg: Config, case_dir: Path, project: str, limits: MemoryThresholds, runtime: Runtime
) -> MemoryRunner:
    """The run's runtime, with the project's SOPs and KB as the cached prefix."""

    return CaseRunner(
        runtime,
        cfg,
        case_dir,
        cache_prefix=cache_prefix(cfg, project),
        timeout_s=limits.model_timeout_seconds,
        max_turns=limits.model_max_turns,
        disallowed=read_only_disallowed(cfg),
        guard=False,
    )
