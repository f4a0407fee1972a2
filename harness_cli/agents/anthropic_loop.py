"""The harness's own agent loop over the Messages API: ask, run the proposed tools, repeat.

Small on purpose (mini-swe-agent's shape): every limit lives in ``_Budget``; a stop is an
exception carrying its reason; the transcript is saved after every step, so ``resume`` picks
up a killed session. Tool calls go through their contracts (``tools.py``): read-only ones of a
turn run concurrently, the rest one at a time in order, and a write outside the allowed root
is refused before it runs. The stable prompt prefix and the conversation so far carry
``cache_control`` so each turn re-reads the previous one from the prompt cache.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import functools
import json
import logging
import os
import re
import ssl
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_cli import paths
from harness_cli.agents import (
    guard,
    mcp_client,
    mcp_contracts,
    policy,
    prompt_layout,
    sandbox,
    tools,
)
from harness_cli.agents.mcp_client import McpHub
from harness_cli.agents.mcp_settings import McpSettings
from harness_cli.agents.sandbox_settings import SandboxSettings
from harness_cli.bounds import InputBounds, bound
from harness_cli.errors import ConfigError
from harness_cli.logs import event, redact
from harness_cli.services.runtime import (
    OUTPUT_KEEP,
    RunRequest,
    RunResult,
    Stop,
    ToolEvent,
    Usage,
    cost_usd,
)
from harness_cli.state.store import atomic_write_json

log = logging.getLogger("harness.agents.anthropic")

DEFAULT_MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 8192
"""Per reply; non-streaming calls above ~21k are refused by the SDK (API-FACTS §3)."""
SDK_MAX_RETRIES = 2
"""The SDK retries 408/409/429/5xx/529 and connection errors with backoff; we add none."""
MAX_PARALLEL_READS = 10
TOOL_GRACE_S = 2.0
EPHEMERAL = {"type": "ephemeral"}
PROMPT_CACHE_ENV = "HARNESS_PROMPT_CACHE"
"""``0`` turns prompt caching off (no ``cache_control`` anywhere): the benchmark's baseline."""
SESSION_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class _Stopped(Exception):
    def __init__(self, stop: Stop, error: str | None = None) -> None:
        super().__init__(error or stop)
        self.stop: Stop = stop
        self.error = error


@dataclass
class _Budget:
    """Every limit of a run, checked here and nowhere else."""

    max_turns: int
    deadline: float
    turns: int = 0

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def before_call(self) -> None:
        if self.turns >= self.max_turns:
            raise _Stopped("max_turns", None)
        if self.remaining() <= 0:
            raise _Stopped("timeout", "the run's wall clock ran out")


class AnthropicRuntime:
    name = "anthropic"

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODEL,
        max_tokens: int = MAX_TOKENS,
        client_factory: Callable[[], Any] | None = None,
        tool_table: Mapping[str, tools.ToolContract] | None = None,
        sessions_dir: Path | None = None,
        prompt_cache: bool | None = None,
        sandbox_settings: SandboxSettings | None = None,
        worktrees: Path | None = None,
        tool_result_chars: int | None = None,
        mcp_settings: McpSettings | None = None,
        mcp_result_bytes: int | None = None,
    ) -> None:
        """``client_factory`` builds a fresh ``anthropic.Anthropic`` per run (default: from the
        environment, ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``), closed when the run ends;
        ``tool_table`` replaces ``tools.TOOLS``;
        transcripts go to ``sessions_dir`` (default ``$HARNESS_HOME/sessions``);
        ``prompt_cache`` marks breakpoints (default: on unless ``HARNESS_PROMPT_CACHE=0``);
        ``sandbox_settings``: harness.yaml's ``sandbox:`` (Bash runs in bubblewrap)."""
        self.model = model
        self.max_tokens = max_tokens
        self.client_factory = client_factory or _default_client
        self.tool_table = dict(tool_table or tools.TOOLS)
        self.sessions_dir = sessions_dir
        if prompt_cache is None:
            prompt_cache = os.environ.get(PROMPT_CACHE_ENV, "1") != "0"
        self.prompt_cache = prompt_cache
        self.sandbox = sandbox_settings or SandboxSettings()
        self.worktrees = worktrees or policy.default_worktrees()
        """Where the cases' worktrees live: outside every run's box."""
        self.tool_result_chars = tool_result_chars or InputBounds().tool_result_chars
        """One tool result's size in the next request (``inputs.tool_result_chars``)."""
        self.mcp = mcp_settings or McpSettings()
        """harness.yaml ``mcp:``: trust, declared effects, write roles, the call timeout."""
        self.mcp_result_bytes = mcp_result_bytes or InputBounds().mcp_result_bytes
        """One MCP answer's size on the wire (``inputs.mcp_result_bytes``): cut while read."""
        self.last_hub: McpHub | None = None
        """The last run's MCP hub (its calls, its failures), for tests and the bench."""

    def run(self, req: RunRequest) -> RunResult:
        denied = policy.disallowed_tools(req)
        offered = {n: c for n, c in self.tool_table.items() if n not in denied}
        with self._catalog(req, denied) as mcp_tools:
            return self._run_with(req, {**offered, **mcp_tools})

    @contextlib.contextmanager
    def _catalog(
        self, req: RunRequest, denied: tuple[str, ...]
    ) -> Iterator[dict[str, tools.ToolContract]]:
        """The run's MCP servers, started once for the run and stopped with it whatever
        happens; yields the tools the role is offered (``mcp_contracts``)."""
        servers = mcp_client.load_servers(req.mcp_config)
        if not servers or not mcp_contracts.role_gets_mcp(req.role):
            yield {}
            return
        hub = mcp_client.McpHub(servers, self.mcp, self.mcp_result_bytes)
        self.last_hub = hub
        try:
            hub.start()
            offered, withheld = mcp_client.contracts(hub, req.role, self.mcp, denied)
            event(log, "mcp_catalog", role=req.role, offered=sorted(offered),
                  withheld=sorted(withheld), failed=hub.failed)  # fmt: skip
            yield offered
        finally:
            hub.stop()

    def _run_with(self, req: RunRequest, offered: dict[str, tools.ToolContract]) -> RunResult:
        boxed = "Bash" in offered and sandbox.required_box(self.name, self.sandbox, req.role)
        with sandbox.scratch() as folder:
            home = folder / "home"
            box = None
            if boxed:
                box = sandbox.view_for(
                    req.workdir,
                    [req.allowed_root],
                    policy.readable_roots(req),
                    home,
                    network=bool(req.network),
                    extra_toolchain=self.sandbox.toolchain,
                    worktrees=self.worktrees,
                )
            readable = policy.readable_roots(req)
            ctx = tools.ToolContext(
                req.workdir, req.allowed_root, 0.0, readable, box, home, self.sandbox.limits
            )
            return guard.guarded(req, lambda: self._run(req, offered, ctx))

    # -- the loop ---------------------------------------------------------------------------
    def _run(
        self, req: RunRequest, offered: dict[str, tools.ToolContract], ctx: tools.ToolContext
    ) -> RunResult:
        session_id = req.session_id or str(uuid.uuid4())
        if not SESSION_ID.match(session_id):
            raise ConfigError(f"session id {session_id!r} is not a plain name")
        messages = self._load(session_id) if req.resume else []
        prompt = prompt_layout.user_content(req, cache=self.prompt_cache)
        if messages and messages[-1]["role"] == "user":  # resumed after tool results
            messages[-1]["content"].extend(prompt)
        else:
            messages.append({"role": "user", "content": prompt})
        budget = _Budget(req.max_turns, time.monotonic() + req.timeout_s)
        ctx = dataclasses.replace(ctx, deadline=budget.deadline)
        result = RunResult(text="", stop="end_turn", session_id=session_id)
        client = self.client_factory()
        req.emit("init", session_id=session_id, model=self.model, tools=list(offered))
        started = time.monotonic()
        pool = cf.ThreadPoolExecutor(MAX_PARALLEL_READS, thread_name_prefix="harness-tool")
        try:
            while True:
                budget.before_call()
                reply = self._ask(client, req, offered, messages, budget)
                budget.turns += 1
                usage = Usage.from_api(reply.usage)
                result.usage.add(usage)
                result.cost_usd += cost_usd(self.model, usage)
                req.emit("usage", **vars(usage))
                content = [_block(b) for b in reply.content]
                messages.append({"role": "assistant", "content": content})
                texts = [str(b["text"]) for b in content if b["type"] == "text"]
                for text in texts:
                    req.emit("text", text=text)
                result.text = "\n".join(texts) or result.text
                calls = [b for b in content if b["type"] == "tool_use"]
                if reply.stop_reason == "tool_use" and calls:
                    outcome = self._tools(calls, offered, ctx, pool, req, result, started)
                    messages.append({"role": "user", "content": outcome})
                    self._save(session_id, messages)
                    continue
                self._save(session_id, messages)
                if reply.stop_reason == "pause_turn":  # a server-side pause: ask it to go on
                    continue
                if reply.stop_reason == "max_tokens":
                    raise _Stopped(
                        "error", f"the reply was cut off at max_tokens={self.max_tokens}"
                    )
                if reply.stop_reason == "refusal":
                    raise _Stopped("error", "the model refused the request")
                break
        except _Stopped as stop:
            result.stop, result.error = stop.stop, stop.error
            self._save(session_id, messages)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            client.close()
        result.turns = budget.turns
        return result

    def _ask(
        self,
        client: Any,
        req: RunRequest,
        offered: Mapping[str, tools.ToolContract],
        messages: list[dict[str, Any]],
        budget: _Budget,
    ) -> Any:
        """One model call, bounded by the wall clock even across the SDK's retries."""
        import anthropic

        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": _system(req, cache=self.prompt_cache),
            "messages": _with_breakpoint(messages) if self.prompt_cache else messages,
        }
        if offered:
            params["tools"] = [c.schema() for c in offered.values()]
        caller = cf.ThreadPoolExecutor(1, thread_name_prefix="harness-model")
        future = caller.submit(client.messages.create, timeout=budget.remaining(), **params)
        try:
            return future.result(timeout=max(0.0, budget.remaining()))
        except cf.TimeoutError:
            client.close()  # ends the in-flight request and any retry still to come
            raise _Stopped(
                "timeout", "the run's wall clock ran out waiting for the model"
            ) from None
        except anthropic.APITimeoutError:
            raise _Stopped("timeout", "the model call timed out") from None
        except anthropic.APIError as exc:
            raise _Stopped("error", redact(f"{type(exc).__name__}: {exc}")) from None
        finally:
            caller.shutdown(wait=False)

    def _tools(
        self,
        calls: list[dict[str, Any]],
        offered: Mapping[str, tools.ToolContract],
        ctx: tools.ToolContext,
        pool: cf.ThreadPoolExecutor,
        req: RunRequest,
        result: RunResult,
        started: float,
    ) -> list[dict[str, Any]]:
        """Run one turn's calls: consecutive read-only ones together, the rest alone, in order."""
        outcome: list[dict[str, Any]] = []
        for batch in _batches(calls, offered):
            running = []
            for call in batch:
                tool = ToolEvent(str(call["id"]), str(call["name"]), dict(call.get("input") or {}))
                tool.started = time.monotonic() - started
                result.tool_events.append(tool)
                req.emit("tool_use", id=tool.id, name=tool.name, input=tool.input)
                contract = offered.get(tool.name)
                limit = time.monotonic() + (contract.timeout_s if contract else 1.0)
                running.append((tool, contract, limit, pool.submit(_run_one, contract, ctx, call)))
            for tool, contract, limit, future in running:
                text, is_error = _wait(tool.name, contract, min(limit, ctx.deadline), future)
                # a tool result goes to the model: the one redaction point, and bounded
                text = bound(
                    redact(text),
                    self.tool_result_chars,
                    what=f"the {tool.name} result",
                    where="nowhere else: narrow the call (offset/limit, a tighter pattern)",
                )
                tool.output, tool.is_error = text[:OUTPUT_KEEP], is_error
                tool.ended, tool.done = time.monotonic() - started, True
                req.emit("tool_result", id=tool.id, is_error=is_error, output=text[:500])
                block = {"type": "tool_result", "tool_use_id": tool.id, "content": text}
                outcome.append({**block, "is_error": is_error})
        if ctx.remaining() <= 0:
            raise _Stopped("timeout", "the run's wall clock ran out during tool calls")
        return outcome

    # -- transcript -------------------------------------------------------------------------
    def _transcript(self, session_id: str) -> Path:
        return (self.sessions_dir or paths.home() / "sessions") / f"{session_id}.json"

    def _save(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        data = {"schema_version": 1, "model": self.model, "messages": messages}
        atomic_write_json(self._transcript(session_id), data)

    def _load(self, session_id: str) -> list[dict[str, Any]]:
        path = self._transcript(session_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"session {session_id} cannot be resumed: {path} unreadable ({exc})",
                hint="start a new session (resume=False)",
            ) from None
        messages: list[dict[str, Any]] = data.get("messages", [])
        # A session killed between a tool call and its result cannot be continued as is.
        if (
            messages
            and messages[-1]["role"] == "assistant"
            and any(b.get("type") == "tool_use" for b in messages[-1]["content"])
        ):
            messages.pop()
        return messages


def _run_one(
    contract: tools.ToolContract | None, ctx: tools.ToolContext, call: Any
) -> tuple[str, bool]:
    if contract is None:
        return f"No such tool available: {call.get('name')}", True
    try:
        return tools.call(contract, ctx, call.get("input")), False
    except tools.ToolFailure as exc:
        return str(exc), True


def _batches(
    calls: list[dict[str, Any]], offered: Mapping[str, tools.ToolContract]
) -> list[list[dict[str, Any]]]:
    """Consecutive read-only calls form one batch; every other call is a batch of its own."""
    batches: list[list[dict[str, Any]]] = []
    for call in calls:
        reading = _effect(offered, call) == "read-only"
        if reading and batches and _effect(offered, batches[-1][0]) == "read-only":
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


def _wait(
    name: str,
    contract: tools.ToolContract | None,
    deadline: float,
    future: cf.Future[tuple[str, bool]],
) -> tuple[str, bool]:
    reading = contract is None or contract.effect == "read-only"
    # A grace for the others lets their own limit (Bash kills its group) fire first.
    wait = deadline + (0.0 if reading else TOOL_GRACE_S) - time.monotonic()
    try:
        return future.result(timeout=max(0.0, wait))
    except cf.TimeoutError:
        if not reading:  # still running: a next write could overlap it, so the run ends here
            raise _Stopped("error", f"{name} did not finish in time") from None
        return f"{name} timed out", True


def _effect(offered: Mapping[str, tools.ToolContract], call: dict[str, Any]) -> str | None:
    contract = offered.get(str(call.get("name")))
    return contract.effect if contract else None


def _system(req: RunRequest, *, cache: bool = True) -> list[dict[str, Any]]:
    """The case's prefix (``prompt_layout.system_parts``), one block each, with a breakpoint
    on the last: every role given that prefix, in every call of the case, reads it from the
    cache. The role's own framing carries the next breakpoint (``prompt_layout.user_content``),
    the conversation's last block the third (``_with_breakpoint``)."""
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": b} for b in prompt_layout.system_parts(req)
    ]
    if cache:
        blocks[-1]["cache_control"] = EPHEMERAL
    return blocks


def _with_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation with one breakpoint on its last block: the next turn reads up to it."""
    last = messages[-1]
    content = list(last["content"])
    content[-1] = {**content[-1], "cache_control": EPHEMERAL}
    return [*messages[:-1], {**last, "content": content}]


def _block(block: Any) -> dict[str, Any]:
    """An SDK content block as the plain dict the next request sends back."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


def _default_client() -> Any:
    import anthropic

    client = anthropic.Anthropic(
        max_retries=SDK_MAX_RETRIES,
        http_client=anthropic.DefaultHttpxClient(verify=_tls_context(*_tls_env())),
    )
    if not (client.api_key or client.auth_token):
        raise ConfigError(
            "the anthropic runtime has no API key",
            hint="set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for the sandbox)",
        )
    return client


def _tls_env() -> tuple[str | None, str | None]:
    return os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")


@functools.cache
def _tls_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    """One TLS context per process (per CA setting): loading the CA store costs ~0.1 s, which
    every model call paid again when each client built its own."""
    return ssl.create_default_context(cafile=cafile, capath=capath)
