"""One model call of the investigation, whatever the runtime: the role's tool policy, the
boundary (writes only inside the case folder; ``message.json`` is evidence), and the accounting
of every call (tokens, cost, what the guard had to put back)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.agents import policy
from harness_cli.agents.runtime import RunRequest, Runtime
from harness_cli.config import Config
from harness_cli.errors import ServiceError
from harness_cli.logs import event
from harness_cli.ops.status_message import RunStatus, observe

log = logging.getLogger("harness.investigation")

ModelCall = Callable[[str, str], str]
"""``ask(role, prompt) -> text``."""

SLACK_WRITE_TOOLS = policy.SLACK_WRITE_TOOLS


def investigation_disallowed(cfg: Config) -> tuple[str, ...]:
    """ "The investigation pipeline explicitly bans Bash" and "Slack write tools are blocked in
    every pipeline invocation": all outbound text goes through draft_response. (The runtimes
    apply ``agents.policy`` to every run as well; this names it for the record.)"""
    return ("Bash", *policy.slack_write_tools(list(cfg.mcp.mcpServers)))


def evidence_paths(cfg: Config, project: str) -> tuple[Path, ...]:
    """The project's ``evidence_paths`` (projects.yaml), ``~`` expanded."""
    found = cfg.projects.projects.get(project)
    return tuple(Path(p).expanduser() for p in found.evidence_paths) if found else ()


@dataclass
class CallRecord:
    role: str
    stop: str
    turns: int
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    cost_usd: float
    reverted: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class CaseRunner:
    runtime: Runtime
    cfg: Config
    case_dir: Path
    cache_prefix: tuple[str, ...] = ()
    timeout_s: float = 900.0
    max_turns: int = 30
    calls: list[CallRecord] = field(default_factory=list)
    status: RunStatus | None = None
    """The live status message in the case thread; the workflow closes it (done/failed)."""
    disallowed: tuple[str, ...] | None = None
    """Tools never offered; None: the investigation's policy (no Bash, no Slack writes)."""
    guard: bool = True
    """Snapshot and put back protected folders after the run. Read-only agents (memory) need
    no guard, and must not have one: a concurrent run may write their case legitimately."""
    evidence: tuple[Path, ...] = ()
    """The project's evidence paths; the roles that may read them get them (agents.policy)."""

    def __call__(self, role: str, prompt: str, *, context: str = "") -> str:
        """``context``: what stays the same for every call of this role in the case (the
        ticket, the locked slate, the report contract) — placed after the shared prefix in the
        cached system part, so each iteration reads it from the cache instead of resending it
        after the guard notes, which change every round."""
        if self.status is not None:
            self.status.start(role)
        result = self.runtime.run(
            RunRequest(
                role=role,
                prompt=prompt,
                workdir=self.case_dir,
                allowed_root=self.case_dir,
                read_roots=policy.read_roots_for(role, self.evidence),
                disallowed_tools=self.disallowed
                if self.disallowed is not None
                else investigation_disallowed(self.cfg),
                max_turns=self.max_turns,
                timeout_s=self.timeout_s,
                mcp_config=self._mcp(),
                cache_prefix=(*self.cache_prefix, context) if context else self.cache_prefix,
                protect=self._protected() if self.guard else (),
                on_event=observe(self.status, case_id=self.case_dir.name, role=role),
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
        if result.reverted:
            event(log, "writes_reverted", logging.WARNING, role=role, files=result.reverted)
        if result.stop in ("error", "timeout") and not result.text:
            raise ServiceError(
                f"the {role} run failed: {result.error or result.stop}",
                hint="the model service may be down; re-run the workflow",
            )
        return result.text

    def _protected(self) -> tuple[Path, ...]:
        """Folders whose changes outside the case folder are put back after the run: the case
        itself (message.json), the SOPs and the config. Not the other cases: a concurrent
        investigation writes there legitimately."""
        from harness_cli.investigation.prompts import sops_dir

        return tuple(p for p in (self.case_dir, sops_dir(self.cfg), self.cfg.dir) if p.is_dir())

    def _mcp(self) -> Path | None:
        path = self.cfg.dir / "mcp.json"
        return path if path.exists() and self.cfg.mcp.mcpServers else None

    def drain(self) -> list[dict[str, Any]]:
        """The records since the last drain (for iterations/NN.json)."""
        out = [asdict(c) for c in self.calls]
        self.calls.clear()
        return out
