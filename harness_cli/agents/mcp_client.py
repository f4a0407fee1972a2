"""The harness's own MCP client: the anthropic runtime's view of ``agent-config/mcp.json``.

One :class:`McpHub` per run: every server of the catalog is started once when the run starts
(stdio and streamable HTTP, through the official ``mcp`` SDK), its tools are listed, each gets
its contract (``mcp_contracts``), and the role's permitted ones are offered to the model as
``mcp__<server>__<tool>``. Calls go through the hub's event loop (one thread, a blocking
portal), so the tool loop's threads can run a turn's read-only calls side by side. Every call
is bounded twice: by its timeout (``mcp: timeout_s``) and by the size of its answer (``inputs:
mcp_result_bytes``), which is cut *while it is read* — the stdio reader and the HTTP transport
below stop keeping bytes at the cap, so a 1 GB answer never sits in memory. An error, a
timeout, a dead server: the model gets a tool error, the run goes on. When the run ends the
hub stops every server (stdio: stdin closed, then the process group killed; each is also
started to die with this process, ``lifetime.die_with_parent``).

The SDK is imported when a hub starts, never at module import (``harness --help`` stays fast).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

# httpx is light and already loaded by whoever imports this module (the anthropic runtime,
# itself imported only when a run starts); the MCP SDK and anyio are imported where used.
import httpx

from harness_cli.agents import lifetime
from harness_cli.agents.mcp_contracts import ToolPolicy, effect_of, offered_to
from harness_cli.agents.mcp_servers import (
    ServerEntryError,
    describe,
    expand,
    http_headers,
    transport,
)
from harness_cli.agents.mcp_settings import McpSettings
from harness_cli.agents.tools import ToolContract, ToolFailure
from harness_cli.config import McpConfig, load_json_model
from harness_cli.logs import event

if TYPE_CHECKING:
    from harness_cli.config import McpServer

log = logging.getLogger("harness.agents.mcp")

STOP_GRACE_S = 2.0
"""After stdin closes, how long a stdio server gets to exit before its group is killed."""
HEAD_BYTES = 16_384
"""How much of an answer over the cap is kept (what the model sees of it)."""
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


@dataclass
class McpTool:
    """One tool of the catalog: what the server listed, and the contract it was given."""

    policy: ToolPolicy
    description: str
    input_schema: dict[str, Any]


@dataclass
class CallRecord:
    """One call the hub made (the wire's account, whatever the model says about it)."""

    server: str
    tool: str
    ok: bool
    seconds: float
    cut: bool = False


@dataclass
class McpHub:
    servers: dict[str, McpServer]
    settings: McpSettings = field(default_factory=McpSettings)
    result_bytes: int = 1_000_000
    tools: list[McpTool] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Servers that did not start, with why (left out of the catalog)."""
    calls: list[CallRecord] = field(default_factory=list)
    _sessions: dict[str, Any] = field(default_factory=dict)
    _portal_cm: Any = None
    _portal: Any = None
    _main: Any = None
    _stop: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> McpHub:
        """Start every server at once, each within ``start_timeout_s``; a server that fails
        is named in ``failed`` and the log, and the run goes on without it."""
        from anyio.from_thread import start_blocking_portal

        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._stop = self._portal.call(_new_event)
        ready = {name: self._portal.call(_new_event) for name in self.servers}
        self._main = self._portal.start_task_soon(self._serve_all, ready)
        try:
            self._portal.call(_wait_all, list(ready.values()))
        except BaseException:
            self.stop()
            raise
        for name, why in self.failed.items():
            event(log, "mcp_server_unavailable", logging.WARNING, server=name, error=why)
        return self

    def stop(self) -> None:
        """Every server stopped; bounded (a server that will not close is killed)."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        with contextlib.suppress(Exception):
            portal.call(self._stop.set)
        if self._main is not None:
            with contextlib.suppress(BaseException):
                self._main.result(timeout=STOP_GRACE_S * 3)
            if not self._main.done():
                self._main.cancel()
                with contextlib.suppress(BaseException):
                    self._main.result(timeout=STOP_GRACE_S * 2)
        with contextlib.suppress(BaseException):
            self._portal_cm.__exit__(None, None, None)
        self._sessions.clear()

    def __enter__(self) -> McpHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- calls -----------------------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """``(text, is_error)`` — never raises for anything the server did."""
        portal = self._portal
        started = time.monotonic()
        if portal is None:
            return f"{server} is not running (the run's MCP servers were stopped)", True
        try:
            text, is_error, cut = portal.call(self._call, server, tool, arguments)
        except Exception as exc:  # noqa: BLE001 - whatever broke is the model's tool error
            text, is_error, cut = f"{server}/{tool} failed: {describe(exc)}", True, False
        with self._lock:
            self.calls.append(
                CallRecord(server, tool, not is_error, time.monotonic() - started, cut)
            )
        return text, is_error

    async def _call(
        self, server: str, tool: str, arguments: dict[str, Any]
    ) -> tuple[str, bool, bool]:
        import anyio
        from mcp import types

        session = self._sessions.get(server)
        if session is None:
            why = self.failed.get(server, "not in this run's catalog")
            return f"{server} is not available in this run: {why}", True, False
        timeout = self.settings.timeout_s
        request = types.ClientRequest(
            types.CallToolRequest(
                params=types.CallToolRequestParams(name=tool, arguments=arguments)
            )
        )
        # The SDK's call_tool would also check structured content against an output schema;
        # the model reads text, and a cut answer has no structured part to check.
        with anyio.move_on_after(timeout) as scope:
            result = await session.send_request(
                request,
                types.CallToolResult,
                request_read_timeout_seconds=timedelta(seconds=timeout + 1),
            )
        if scope.cancelled_caught:
            return f"{server}/{tool} timed out after {timeout:g} s (no answer)", True, False
        text = _text(result)
        cut = text.startswith(CUT_MARK)
        return text, bool(result.isError), cut

    # -- serving ---------------------------------------------------------------------------
    async def _serve_all(self, ready: dict[str, Any]) -> None:
        import anyio

        async with anyio.create_task_group() as group:
            for name, server in self.servers.items():
                group.start_soon(self._serve, name, server, ready[name])

    async def _serve(self, name: str, server: McpServer, ready: Any) -> None:
        import anyio
        from mcp import ClientSession

        # Opening spawns the process or builds the HTTP client: the waiting is in initialize,
        # bounded inside (a transport's task group must not sit in a scope that ends first).
        try:
            async with (
                _open(server, self.result_bytes) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(self.settings.start_timeout_s):
                    await session.initialize()
                    listed = await session.list_tools()
                for tool in listed.tools:
                    policy = effect_of(name, tool.name, tool.annotations, self.settings)
                    self.tools.append(
                        McpTool(policy, tool.description or "", dict(tool.inputSchema or {}))
                    )
                self._sessions[name] = session
                ready.set()
                await self._stop.wait()
                self._sessions.pop(name, None)
        except Exception as exc:  # noqa: BLE001 - a server that fails is a finding, not a crash
            self._sessions.pop(name, None)
            if not ready.is_set():
                self.failed[name] = _why(exc, self.settings.start_timeout_s)
            else:
                event(log, "mcp_server_lost", logging.WARNING, server=name, error=describe(exc))
        finally:
            ready.set()


def _new_event() -> Any:
    import anyio

    return anyio.Event()


async def _wait_all(events: list[Any]) -> None:
    for e in events:
        await e.wait()


def _why(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"did not start within {timeout:g} s"
    if isinstance(exc, ServerEntryError):
        return str(exc)
    return describe(exc)


CUT_MARK = "[answer cut at "


def _text(result: Any) -> str:
    parts = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind} content left out]")
    if not parts and result.structuredContent is not None:
        parts.append(json.dumps(result.structuredContent))
    return "\n".join(parts) or "(empty result)"


def cut_answer(request_id: Any, head: bytes, total: int, cap: int) -> dict[str, Any]:
    """The JSON-RPC answer that stands for one over the cap: its head, as text, and a note."""
    body = head.decode("utf-8", "replace")
    marker = body.find('"text":"')
    if marker >= 0:  # the tool's own text, unescaped as far as it goes
        body = body[marker + 8 :]
        body = body.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
    note = (
        f"{CUT_MARK}{cap} bytes: {total} bytes or more arrived, the rest was not read; "
        f"the first {len(head)} follow — narrow the query (a time range, a limit)]\n"
    )
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": note + body}], "isError": False},
    }


def _request_id(head: bytes) -> Any:
    found = _ID.search(head)
    return json.loads(found.group(1)) if found else None


# -- transports ----------------------------------------------------------------------------


@asynccontextmanager
async def _open(server: McpServer, cap: int) -> AsyncIterator[tuple[Any, Any]]:
    opener = _stdio(server, cap) if transport(server) == "stdio" else _http(server, cap)
    async with opener as (read, write):
        yield read, write


@asynccontextmanager
async def _stdio(server: McpServer, cap: int) -> AsyncIterator[tuple[Any, Any]]:
    """The server as a child process in a group of its own, read line by line with every line
    bounded at ``cap`` bytes: past it the bytes are counted and dropped, and the answer the
    session gets is :func:`cut_answer`'s."""
    import anyio
    from mcp import types
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    argv = [expand(server.command or ""), *(expand(a) for a in server.args)]
    env = {**get_default_environment(), **{k: expand(v) for k, v in server.env.items()}}
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)
    # The server's stderr goes to a file: cron mails whatever reaches ours.
    errlog = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    process = await anyio.open_process(
        lifetime.die_with_parent(argv), env=env, stderr=errlog, start_new_session=True
    )

    async def deliver(line: bytes | None, head: bytes, total: int) -> None:
        if line is None:  # over the cap
            message: Any = types.JSONRPCMessage.model_validate(
                cut_answer(_request_id(head), head, total, cap)
            )
            await read_send.send(SessionMessage(message))
            return
        if not line.strip():
            return
        try:
            message = types.JSONRPCMessage.model_validate_json(line)
        except Exception as exc:  # noqa: BLE001 - the session hears of it
            await read_send.send(exc)
            return
        await read_send.send(SessionMessage(message))

    async def reader() -> None:
        assert process.stdout is not None
        buf, total, over = bytearray(), 0, False
        async with read_send:
            try:
                async for chunk in process.stdout:
                    while chunk:
                        end = chunk.find(b"\n")
                        part, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1 :])
                        total += len(part)
                        if not over:
                            buf += part
                            if len(buf) > cap:
                                over, buf = True, buf[:HEAD_BYTES]
                        if end >= 0:
                            await deliver(None if over else bytes(buf), bytes(buf), total)
                            buf, total, over = bytearray(), 0, False
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    async def writer() -> None:
        assert process.stdin is not None
        async with write_recv:
            try:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send((data + "\n").encode())
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(writer)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _end(process)
                group.cancel_scope.cancel()
    finally:
        errlog.close()
        await read_recv.aclose()
        await write_send.aclose()


async def _end(process: Any) -> None:
    """stdin closed (a well-behaved server exits), then the whole group killed."""
    import anyio

    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    with anyio.move_on_after(STOP_GRACE_S):
        await process.wait()
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with anyio.move_on_after(STOP_GRACE_S):
            await process.wait()
    else:  # its children too, if it left any in its group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


@asynccontextmanager
async def _http(server: McpServer, cap: int) -> AsyncIterator[tuple[Any, Any]]:
    from mcp.client.streamable_http import streamable_http_client

    url = expand(server.url or "")
    headers = {**http_headers(server), "Accept-Encoding": "identity"}
    client = httpx.AsyncClient(
        headers=headers,
        timeout=httpx.Timeout(30.0, read=None),
        follow_redirects=True,
        transport=_CappedTransport(httpx.AsyncHTTPTransport(), cap),
    )
    async with client, streamable_http_client(url, http_client=client) as (read, write, _):
        yield read, write


class _CappedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose answers are read at most ``cap`` bytes per message: a JSON
    body or one SSE event over it is replaced by :func:`cut_answer` and the rest is never
    read (the connection is closed)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, cap: int) -> None:
        self.inner, self.cap = inner, cap

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        kind = response.headers.get("content-type", "")
        if request.method != "POST" or not (
            kind.startswith("application/json") or kind.startswith("text/event-stream")
        ):
            return response
        try:
            request_id = json.loads(request.content).get("id")
        except (ValueError, AttributeError):
            request_id = None
        headers = [(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
        stream = _CappedStream(response.stream, self.cap, request_id, kind.startswith("text/"))
        return httpx.Response(
            response.status_code, headers=headers, stream=stream, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: Any, cap: int, request_id: Any, sse: bool) -> None:
        self.inner, self.cap, self.request_id, self.sse = inner, cap, request_id, sse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        held = bytearray()
        total = 0
        async for chunk in self.inner:
            total += len(chunk)
            held += chunk
            if self.sse:  # pass on every complete event, hold the one being read
                while (end := held.find(b"\n\n")) >= 0 or (end := held.find(b"\r\n\r\n")) >= 0:
                    size = 4 if held[end : end + 4] == b"\r\n\r\n" else 2
                    yield bytes(held[: end + size])
                    del held[: end + size]
                    total = len(held)
            if len(held) > self.cap:
                answer = json.dumps(cut_answer(self.request_id, bytes(held[:HEAD_BYTES]),
                                               total, self.cap))  # fmt: skip
                with contextlib.suppress(Exception):
                    await self.inner.aclose()
                yield (f"event: message\ndata: {answer}\n\n" if self.sse else answer).encode()
                return
        if held:
            yield bytes(held)

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- the catalog as a run sees it ------------------------------------------------------------


def load_servers(path: Path | None) -> dict[str, McpServer]:
    """The ``mcpServers`` of ``path`` (agent-config/mcp.json); none for no path."""
    if path is None:
        return {}

    return dict(load_json_model(path, McpConfig).mcpServers)


def contracts(
    hub: McpHub, role_name: str, settings: McpSettings, denied: tuple[str, ...] = ()
) -> tuple[dict[str, ToolContract], list[str]]:
    """The tools ``role_name`` is offered (as the tool loop's contracts) and the names it is
    not (withheld by its contract: a write for a read-only role, a Slack write tool)."""

    offered: dict[str, ToolContract] = {}
    withheld: list[str] = []
    for tool in hub.tools:
        name = tool.policy.name
        if name in denied or not offered_to(tool.policy, role_name, settings):
            withheld.append(name)
            continue
        offered[name] = _contract(hub, tool, settings)
    return offered, withheld


def _contract(hub: McpHub, tool: McpTool, settings: McpSettings) -> ToolContract:
    server, name = tool.policy.server, tool.policy.tool

    def run(_ctx: Any, args: dict[str, Any]) -> str:
        text, is_error = hub.call(server, name, args)
        if is_error:
            raise ToolFailure(text)
        return text

    schema = {"type": "object", **tool.input_schema}
    return ToolContract(
        name=tool.policy.name,
        effect=tool.policy.effect,
        retry_safe=False,  # the hub never retries: a write may have landed
        timeout_s=settings.timeout_s + TIMEOUT_MARGIN_S,
        description=(tool.description or f"{name} on the {server} MCP server")[:2000],
        properties=dict(schema.get("properties") or {}),
        required=tuple(schema.get("required") or ()),
        run=run,
        input_schema=schema,
    )


TIMEOUT_MARGIN_S = 2.0
"""The tool loop waits this much longer than the hub's own timeout, which answers first."""


def withheld_for(
    servers: dict[str, McpServer], settings: McpSettings, role_name: str, result_bytes: int
) -> tuple[list[str], dict[str, str]]:
    """For a runtime that is its own MCP client (the claude CLI): the catalog listed once, and
    the tool names ``role_name`` must not be offered — its contracts' refusals, plus a whole
    server (``mcp__<server>``) whose tools could not be listed (fail closed). Also returns the
    servers that failed, with why."""
    hub = McpHub(servers, settings, result_bytes)
    try:
        hub.start()
        _, withheld = contracts(hub, role_name, settings)
        withheld += [f"mcp__{name}" for name in hub.failed]
        return withheld, dict(hub.failed)
    finally:
        hub.stop()
