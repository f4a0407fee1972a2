"""One model call of a memory agent (followup, gap-analyzer, consolidator), whatever the
runtime, with the accounting of ``investigation.runs.CaseRunner`` and a stricter boundary: these
agents read the case folder and never write anywhere. Their answer is text; the harness decides
what of it reaches disk or Slack ("the harness, not the agent, writes it").

No file is snapshotted and put back here, unlike an investigation: a consolidation or a
re-investigation may legitimately write the same case folder during a followup, and a revert
would undo their work. The write tools are simply never offered.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.agents.runtime import RunRequest, Runtime
from harness_cli.config import Config
from harness_cli.errors import ServiceError
from harness_cli.investigation.runs import SLACK_WRITE_TOOLS, CallRecord
from harness_cli.logs import event
from harness_cli.memory.thresholds import MemoryThresholds

log = logging.getLogger("harness.memory")

WRITE_TOOLS = ("Bash", "Write", "Edit", "MultiEdit", "NotebookEdit")


def read_only_disallowed(cfg: Config) -> tuple[str, ...]:
    """Every tool that changes something: files, the shell, and Slack writes ("all outbound
    text goes through the harness")."""
    mcp = [f"mcp__{server}__{tool}" for server in cfg.mcp.mcpServers for tool in SLACK_WRITE_TOOLS]
    return (*WRITE_TOOLS, *mcp)


@dataclass
class MemoryRunner:
    runtime: Runtime
    cfg: Config
    case_dir: Path
    limits: MemoryThresholds
    cache_prefix: tuple[str, ...] = ()
    calls: list[CallRecord] = field(default_factory=list)

    def __call__(self, role: str, prompt: str) -> str:
        result = self.runtime.run(
            RunRequest(
                role=role,
                prompt=prompt,
                workdir=self.case_dir,
                allowed_root=self.case_dir,
                disallowed_tools=read_only_disallowed(self.cfg),
                max_turns=self.limits.model_max_turns,
                timeout_s=self.limits.model_timeout_seconds,
                mcp_config=self._mcp(),
                cache_prefix=self.cache_prefix,
            )
        )
        u = result.usage
        record = CallRecord(
            role,
            result.stop,
            result.turns,
            u.input,
            u.output,
            u.cache_creation,
            u.cache_read,
            result.cost_usd,
            list(result.reverted),
            result.error,
        )
        self.calls.append(record)
        event(log, "model_call", **asdict(record))
        if result.stop in ("error", "timeout") and not result.text:
            raise ServiceError(
                f"the {role} run failed: {result.error or result.stop}",
                hint="the model service may be down; re-run the workflow",
            )
        return result.text

    def _mcp(self) -> Path | None:
        path = self.cfg.dir / "mcp.json"
        return path if path.exists() and self.cfg.mcp.mcpServers else None

    def drain(self) -> list[dict[str, Any]]:
        out = [asdict(c) for c in self.calls]
        self.calls.clear()
        return out


def build(cfg: Config, case_dir: Path, project: str, limits: MemoryThresholds) -> MemoryRunner:
    """The configured runtime, with the project's SOPs and KB as the cached prefix."""
    from harness_cli.agents.factory import build_runtime, runtime_name
    from harness_cli.investigation.loop import cache_prefix

    runtime = build_runtime(runtime_name(cfg.harness.runtime), model=cfg.harness.model)
    return MemoryRunner(runtime, cfg, case_dir, limits, cache_prefix=cache_prefix(cfg, project))
