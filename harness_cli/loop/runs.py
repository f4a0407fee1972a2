"""One model call of the investigation, whatever the runtime: the role's tool policy, the
boundary (writes only inside the case folder; ``message.json`` is evidence), the accounting
of every call (tokens, cost, what the guard had to put back, the tool calls it made), and
what a call that could not reach the model is called (``ModelUnavailable``)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from harness_cli import paths
from harness_cli.agents import policy
from harness_cli.config import Config
from harness_cli.errors import EXIT_FAILED, EXIT_USAGE, ConfigError, ServiceError
from harness_cli.logs import event
from harness_cli.loop.evidence import ToolUse
from harness_cli.loop.outage import backoffs
from harness_cli.loop.prompts import sops_dir
from harness_cli.loop.run_status import RunStatus, observe
from harness_cli.services.runtime import RunRequest, RunResult, Runtime
from harness_cli.workspace import control

log = logging.getLogger("harness.investigation")

ModelCall = Callable[[str, str], str]
"""``ask(role, prompt) -> text``."""

SLACK_WRITE_TOOLS = policy.SLACK_WRITE_TOOLS
FILE_WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")

Unavailable = Literal["auth", "outage", "timeout", "config"]
NOTE_CHARS = 72

# How the runtimes word a call that never reached a working model (the claude CLI's result
# text, the SDK's exception names; see CLAUDE-CLI-FACTS.md).
_AUTH = re.compile(
    r"not logged in|/login|failed to authenticate|authentication|unauthori[sz]ed|\b401\b|"
    r"invalid (?:x-)?api[- ]?key|permission[_ ]denied|permission_error|\b403\b|no api key",
    re.IGNORECASE,
)
_OUTAGE = re.compile(
    r"overloaded|\b5\d\d\b|api error|connection|timed? ?out|rate[_ -]?limit|\b429\b|"
    r"internal ?server|service unavailable|server-side issue",
    re.IGNORECASE,
)


class ModelUnavailable(ServiceError):
    """A call that could not investigate: the model service down after its retries, the
    credentials refused, the run killed on its wall clock, the runtime not set up. The loop
    ends on it with ``exit=failed`` and this as the cause; it is never mistaken for a model
    that had nothing to say."""

    def __init__(self, kind: Unavailable, role: str, detail: str, *, hint: str) -> None:
        what = {
            "auth": "credentials refused",
            "outage": "service unavailable",
            "timeout": "killed on its wall clock",
            "config": "runtime not set up",
        }[kind]
        detail_line = " ".join(detail.split())[:300]
        super().__init__(
            f"the {role} run could not reach the model ({what}): {detail_line}", hint=hint
        )
        self.kind: Unavailable = kind
        self.role = role
        self.detail = detail
        # 2 (bad config) when credentials or the runtime's setup are at fault, else 1.
        self.exit_code = EXIT_USAGE if kind in ("auth", "config") else EXIT_FAILED

    @property
    def note(self) -> str:
        """The exit line's note: the cause, short (cut at a word, never mid-bracket)."""
        label = {"auth": "model auth", "outage": "model unavailable", "timeout": "model timeout",
                 "config": "model runtime"}[self.kind]  # fmt: skip
        words = " ".join(self.detail.replace("(", "").replace(")", "").split())
        if len(words) > NOTE_CHARS:
            words = words[:NOTE_CHARS].rsplit(" ", 1)[0] + " …"
        return f"{label}: {words}"


_HINTS: dict[Unavailable, str] = {
    "auth": "check ANTHROPIC_API_KEY (or the claude CLI's login) with `harness doctor`, then "
    "run the workflow on case {case} again (`harness investigate {case}`)",
    "outage": "the model API failed after its retries; run the workflow on case {case} again "
    "later (`harness investigate {case}`)",
    "timeout": "the call ran past its wall clock; look at the model service, then run the "
    "workflow on case {case} again",
    "config": "fix the runtime's setup (`harness doctor` says what is missing), then run the "
    "workflow on case {case} again",
}


class WallClockCut(ServiceError):
    """A call cut because the run's wall clock ran out while it ran (``CaseRunner.deadline``):
    the loop ends with its ``timeout`` exit (``rules.wall_clock_used_up``), not ``failed``."""

    def __init__(self, role: str, detail: str) -> None:
        super().__init__(f"the {role} call was cut at the run's wall clock: {detail[:200]}")
        self.role = role


def _hint(kind: Unavailable, case: str) -> str:
    return _HINTS[kind].format(case=case)


def unavailable(role: str, result: RunResult, case: str = "CASE") -> ModelUnavailable | None:
    """The ``ModelUnavailable`` a finished run amounts to, if any. A run that stopped on an
    error is one when its error reads like auth or an outage — the claude CLI then returns
    its error message as the result text, which must not pass for the model's answer — or
    when it returned nothing at all. A refusal or a reply cut off at max_tokens is a round
    without a usable report, not an outage."""
    if result.stop == "timeout":
        detail = result.error or "killed on its wall clock"
        return ModelUnavailable("timeout", role, detail, hint=_hint("timeout", case))
    if result.stop != "error":
        return None
    detail = result.error or "the run stopped on an error"
    if _AUTH.search(detail):
        return ModelUnavailable("auth", role, detail, hint=_hint("auth", case))
    if _OUTAGE.search(detail) or not result.text.strip():
        return ModelUnavailable("outage", role, detail, hint=_hint("outage", case))
    return None


def investigation_disallowed(cfg: Config) -> tuple[str, ...]:
    """ "The investigation pipeline explicitly bans Bash" and "Slack write tools are blocked in
    every pipeline invocation": all outbound text goes through draft_response. (The runtimes
    apply ``agents.policy`` to every run as well; this names it for the record.)"""
    return ("Bash", *policy.slack_write_tools(list(cfg.mcp.mcpServers)))


def evidence_paths(cfg: Config, project: str) -> tuple[Path, ...]:
    """The project's ``evidence_paths`` (projects.yaml), ``~`` expanded."""
    found = cfg.projects.projects.get(project)
    return tuple(Path(p).expanduser() for p in found.evidence_paths) if found else ()


def reviewer_disallowed(cfg: Config) -> tuple[str, ...]:
    """A reviewer reads and answers: no shell, no file writes, no Slack writes."""
    return (*investigation_disallowed(cfg), *FILE_WRITE_TOOLS)


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
    tools: list[dict[str, Any]] = field(default_factory=list)
    """The tool calls the runtime reported (``evidence.ToolUse``): what G4 and stalled read."""
    seconds: float = 0.0
    """Wall time of the runtime's run (the model's turns and its tool calls)."""


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
    tool_uses: list[ToolUse] = field(default_factory=list)
    """Tool calls since the last ``take_tools``."""
    deadline: float | None = None
    """``time.monotonic()`` at which the run's wall clock runs out (the loop sets it): no call
    runs past it, whatever its own ``timeout_s``."""
    sleep: Callable[[float], None] = time.sleep
    """How a retry waits out its backoff."""

    def __call__(self, role: str, prompt: str, *, context: str = "") -> str:
        """``context``: what stays the same for every call of this role in the case (the
        ticket, the locked slate, the report contract) — placed after the shared prefix in the
        cached system part, so each iteration reads it from the cache instead of resending it
        after the guard notes, which change every round."""
        return self._run(
            role,
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
                mcp_config=self.cfg.mcp_file,
                cache_prefix=self.cache_prefix,
                context=context,
                protect=self._protected() if self.guard else (),
                on_event=observe(self.status, case_id=self.case_dir.name, role=role),
            ),
        )

    def isolated(self, role: str, prompt: str, workdir: Path) -> str:
        """A reviewer's call, isolated by construction: its cwd is a fresh folder holding only
        what its role may see, it may read nothing else (``read_roots=()``), it has no write
        tool, no MCP server and none of the investigator's system prefix; the case, the SOPs
        and the config stay guarded all the same."""
        return self._run(
            role,
            RunRequest(
                role=role,
                prompt=prompt,
                workdir=workdir,
                allowed_root=workdir,
                read_roots=(),
                disallowed_tools=reviewer_disallowed(self.cfg),
                max_turns=self.max_turns,
                timeout_s=self.timeout_s,
                mcp_config=None,
                cache_prefix=(),
                protect=self._protected() if self.guard else (),
                on_event=observe(self.status, case_id=self.case_dir.name, role=role),
            ),
        )

    def _run(self, role: str, req: RunRequest) -> str:
        """One call; a transient failure of the model service is tried again with backoff
        while the run's wall clock allows (``loop.outage``), then raised as ``outage``."""

        waits = backoffs(self.cfg.harness.model_outage)
        while True:
            try:
                return self._once(role, req)
            except ModelUnavailable as exc:
                if exc.kind != "outage" or not waits:
                    raise
                wait = waits.pop(0)
                if self.deadline is not None and time.monotonic() + wait >= self.deadline:
                    raise
                event(log, "model_retry", logging.WARNING, role=role, wait_s=wait,
                      error=" ".join(exc.detail.split())[:200])  # fmt: skip
                self.sleep(wait)

    def _once(self, role: str, req: RunRequest) -> str:
        if self.status is not None:
            self.status.start(role)
        started = time.monotonic()
        cut = self.deadline is not None and self.deadline - started < req.timeout_s
        if cut:
            assert self.deadline is not None
            req = replace(req, timeout_s=max(1.0, self.deadline - started))
        try:
            result = self.runtime.run(req)
        except ConfigError as exc:  # no claude binary, no API key: nothing could be asked
            case = self.case_dir.name
            hint = f"{exc.hint}; then run the workflow on case {case} again" if exc.hint else None
            raise ModelUnavailable(
                "config", role, exc.message, hint=hint or _hint("config", case)
            ) from None
        finally:
            if self.guard:  # a mirror the agent edited shows the harness's version again
                control.refresh_mirrors(self.case_dir)
        u = result.usage
        uses = [ToolUse.from_event(t) for t in result.tool_events]
        self.tool_uses += uses
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
            [t.to_json() for t in uses],
            round(time.monotonic() - started, 4),
        )
        self.calls.append(record)
        event(log, "model_call", **{k: v for k, v in asdict(record).items() if k != "tools"})
        if result.reverted:
            event(log, "writes_reverted", logging.WARNING, role=role, files=result.reverted)
        if cut and result.stop == "timeout":
            event(log, "model_call_cut", logging.WARNING, role=role, timeout_s=req.timeout_s)
            raise WallClockCut(role, result.error or "killed on its wall clock")
        failure = unavailable(role, result, self.case_dir.name)
        if failure is not None:
            event(log, "model_unavailable", logging.ERROR, role=role, kind=failure.kind,
                  error=failure.detail[:500])  # fmt: skip
            raise failure
        return result.text

    def take_tools(self) -> list[ToolUse]:
        """The tool calls made since the last take (one round's, for the loop)."""
        out, self.tool_uses = self.tool_uses, []
        return out

    def _protected(self) -> tuple[Path, ...]:
        """Folders whose changes outside the case folder are put back after the run: the case
        itself (message.json), the SOPs, the config and the pre-commitment records. Not the
        other cases: a concurrent investigation writes there legitimately."""

        trees = (self.case_dir, sops_dir(self.cfg), self.cfg.dir, paths.precommit_dir())
        return tuple(p for p in trees if p.is_dir())

    def drain(self) -> list[dict[str, Any]]:
        """The records since the last drain (for iterations/NN.json)."""
        out = [asdict(c) for c in self.calls]
        self.calls.clear()
        return out
