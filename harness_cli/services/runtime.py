"""The model runtime's port (the claude CLI and the Anthropic API sit behind it, built by
`agents/factory.py`): the Protocol and the data that crosses it — a request in, a result out,
events live.

A runtime runs one model session to its end and reports what happened; it never decides
whether the work is acceptable (that is the caller's gate, from the evidence on disk).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from harness_cli.cost.prices import price_usd
from harness_cli.redaction import redact

Stop = Literal["end_turn", "max_turns", "timeout", "error"]
EventKind = Literal["init", "text", "tool_use", "tool_result", "usage", "retry"]

ROLE_MARKER = "[harness-role: {role}]"
"""Every prompt carries its role, so a scripted model (and a transcript reader) knows who spoke."""
_ROLE_RE = re.compile(r"\[harness-role:\s*[A-Za-z0-9_.:-]+\s*\]")


@dataclass(frozen=True)
class RunEvent:
    """Live progress: ``init`` (session_id), ``text``, ``tool_use``, ``tool_result``,
    ``usage`` (one model call's tokens), ``retry`` (the CLI's api_retry)."""

    kind: EventKind
    data: dict[str, Any]


@dataclass
class ToolEvent:
    """One tool call as the runtime saw it; times are seconds since the run started."""

    id: str
    name: str
    input: dict[str, Any]
    is_error: bool = False
    output: str = ""
    """The result text, cut to ``OUTPUT_KEEP`` characters."""
    started: float = 0.0
    ended: float = 0.0
    done: bool = False
    """A result came back (false: the run stopped before the call finished)."""


OUTPUT_KEEP = 2000


@dataclass
class Usage:
    """Token totals; total input = input + cache_creation + cache_read (API-FACTS §3)."""

    input: int = 0
    output: int = 0
    cache_creation: int = 0
    cache_read: int = 0

    def add(self, other: Usage) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_creation += other.cache_creation
        self.cache_read += other.cache_read

    @classmethod
    def from_api(cls, usage: Any) -> Usage:
        """From an API ``usage`` object or dict (the SDK's model or a stream-json dict)."""

        def get(name: str) -> int:
            value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
            return int(value) if isinstance(value, int | float) else 0

        return cls(
            input=get("input_tokens"),
            output=get("output_tokens"),
            cache_creation=get("cache_creation_input_tokens"),
            cache_read=get("cache_read_input_tokens"),
        )

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_creation + self.cache_read


@dataclass(kw_only=True)
class RunRequest:
    role: str
    """``investigator``, ``adversarial-reviewer``, ``red-team``, ``dev-agent``…"""
    prompt: str
    """The user prompt; ``[harness-role: <role>]`` is prepended when it is missing."""
    workdir: Path
    """The run's cwd (case dir or worktree)."""
    allowed_root: Path
    """Writes outside it are refused (anthropic) and reverted (both, by the guard)."""
    read_roots: tuple[Path, ...] = ()
    """Paths besides workdir this run may read; everything else is refused (both runtimes:
    the tools' path checks, the claude CLI's permissions, the shell's sandbox)."""
    network: tuple[str, ...] = ()
    """Domains the agent's shell commands may reach (the project's ``agent_network``); empty:
    no network at all. The harness's own loop can only open all of it or none."""
    system: str = ""
    """A role's standing rules, last in the system prompt (``agents.prompt_layout``)."""
    disallowed_tools: tuple[str, ...] = ()
    """Not even offered to the model, e.g. ``("Bash",)`` for investigations."""
    max_turns: int = 20
    timeout_s: float = 600.0
    """Hard wall clock for the whole run; the run is killed on overrun."""
    session_id: str | None = None
    resume: bool = False
    """Continue ``session_id``'s conversation instead of starting it."""
    mcp_config: Path | None = None
    cache_prefix: tuple[str, ...] = ()
    """Stable blocks (SOP, KB…) placed first in the system prompt with ``cache_control``."""
    context: str = ""
    """What every call of this role in this case shares (the ticket, the locked slate…):
    after ``cache_prefix`` in the system prompt, so a case's next call reads it from the
    cache (``agents.prompt_layout``)."""
    protect: tuple[Path, ...] = ()
    """Trees the guard snapshots and restores (allowed_root itself is skipped inside them).
    Only trees no concurrent run may write to: the guard puts back *any* change there."""
    on_event: Callable[[RunEvent], None] | None = None

    def __post_init__(self) -> None:
        # What goes to the model leaves the machine: the one redaction point (a ticket, a log
        # or a CI trace quoted in a prompt may carry a token).
        self.prompt = redact(self.prompt)
        self.system = redact(self.system)
        self.context = redact(self.context)
        self.cache_prefix = tuple(redact(b) for b in self.cache_prefix)

    def emit(self, kind: EventKind, **data: Any) -> None:
        if self.on_event is not None:
            self.on_event(RunEvent(kind, data))

    def role_prompt(self) -> str:
        prompt = redact(self.prompt)
        if _ROLE_RE.search(prompt):
            return prompt
        return f"{ROLE_MARKER.format(role=self.role)} {prompt}"


@dataclass
class RunResult:
    text: str
    stop: Stop
    session_id: str | None = None
    tool_events: list[ToolEvent] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    turns: int = 0
    error: str | None = None
    reverted: list[str] = field(default_factory=list)
    """Paths the guard put back (changed outside the allowed root, or message.json)."""
    model: str | None = None
    """The model that answered, when the runtime learnt it (the claude CLI's init event)."""
    cost_reported: bool = False
    """``cost_usd`` is the runtime's own figure (the claude CLI's ``total_cost_usd``)."""

    @property
    def ok(self) -> bool:
        return self.stop == "end_turn" and self.error is None


class Runtime(Protocol):
    name: str

    def run(self, req: RunRequest) -> RunResult: ...


# -- prices ------------------------------------------------------------------------------------


def cost_usd(model: str, usage: Usage) -> float:
    """What ``usage`` costs on ``model`` by the default price table (``cost.prices``; the
    meter prices every recorded call with harness.yaml's own table)."""

    return price_usd(
        model,
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_write_tokens=usage.cache_creation,
        cache_read_tokens=usage.cache_read,
    )
