"""One MCP health probe with the official SDK (v1.29, pinned): connect, initialize, list the
tools and call the server's no-op tool — the same handshake a claude session makes.

The SDK hides why an HTTP server refused (API-FACTS §4: a 401 surfaces as an exception group,
or in 2.x as a bare JSON-RPC error), so every HTTP response passes an httpx event hook that
records its status and ``WWW-Authenticate``: "token expired" is read off the wire, never
guessed from an empty tool result. How a server is reached (its transport, ``${VAR}``s,
headers) is ``agents/mcp_servers.py``'s, shared with the runtime's own MCP client.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from harness_cli.agents.mcp_servers import (
    ServerEntryError,
    describe,
    expand,
    http_headers,
    transport,
)
from harness_cli.config import McpServer

if TYPE_CHECKING:
    import httpx
    from mcp import ClientSession

PROBE_TIMEOUT_S = 30.0
"""One server's whole check (connect → call) must finish within this; a hung server fails."""
AUTH_STATUSES = (401, 403)

_READ = timedelta(seconds=PROBE_TIMEOUT_S)


@dataclass
class Probe:
    """What one check found. ``stage`` is where it stopped: ``config``, ``connect``,
    ``initialize``, ``list_tools``, ``call_tool`` or ``done``."""

    server: str
    ok: bool = False
    stage: str = "config"
    detail: str = ""
    http_status: int | None = None
    """The first HTTP error status the server answered (HTTP transports only)."""
    www_authenticate: str = ""
    tools: list[str] = field(default_factory=list)
    annotations: dict[str, Any] = field(default_factory=dict)
    """Each tool's annotations as the server states them (``ToolAnnotations`` or None)."""
    stderr: str = ""
    """The tail of a stdio server's stderr when it failed."""
    elapsed_s: float = 0.0

    @property
    def auth_failed(self) -> bool:
        return self.http_status in AUTH_STATUSES

    def line(self) -> str:
        if self.ok:
            return f"ok ({len(self.tools)} tools, {self.elapsed_s:.1f} s)"
        status = f"HTTP {self.http_status}: " if self.http_status else ""
        if status and status[:-2] in self.detail:
            status = ""
        stderr = f" (stderr: {self.stderr})" if self.stderr else ""
        return f"failed at {self.stage}: {status}{self.detail}{stderr}"


def probe(name: str, server: McpServer, *, timeout: float = PROBE_TIMEOUT_S) -> Probe:
    """Check one server (blocking)."""
    return probe_all({name: server}, timeout=timeout)[name]


def probe_all(
    servers: dict[str, McpServer], *, timeout: float = PROBE_TIMEOUT_S
) -> dict[str, Probe]:
    """Check every server at once (blocking); each gets its own ``timeout``."""
    import anyio

    found: dict[str, Probe] = {}

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for name, server in servers.items():
                group.start_soon(_run_one, name, server, timeout, found)

    anyio.run(main)
    return {name: found[name] for name in servers}


async def _run_one(name: str, server: McpServer, timeout: float, out: dict[str, Probe]) -> None:
    import anyio

    result = Probe(name)
    started = time.monotonic()
    try:
        with anyio.fail_after(timeout):
            await _check(server, result)
    except TimeoutError:
        result.detail = f"no answer within {timeout:g} s"
    except ServerEntryError as exc:
        result.detail = str(exc)
    except Exception as exc:  # noqa: BLE001 - whatever broke the handshake is the finding
        result.detail = describe(exc)
    result.elapsed_s = time.monotonic() - started
    out[name] = result


async def _check(server: McpServer, result: Probe) -> None:
    from mcp import ClientSession

    kind = transport(server)
    result.stage = "config"
    opener = _stdio(server, result) if kind == "stdio" else _http(server, kind, result)
    async with opener as (read, write), ClientSession(read, write, read_timeout_seconds=_READ) as s:
        result.stage = "initialize"
        await s.initialize()
        await _use(s, server, result)


async def _use(session: ClientSession, server: McpServer, result: Probe) -> None:
    result.stage = "list_tools"
    listed = await session.list_tools()
    result.tools = [t.name for t in listed.tools]
    result.annotations = {t.name: t.annotations for t in listed.tools}
    if server.noop_tool:
        result.stage = "call_tool"
        if server.noop_tool not in result.tools:
            shown = ", ".join(result.tools[:10]) or "none"
            result.detail = f"no tool {server.noop_tool!r} (tools: {shown})"
            return
        called = await session.call_tool(server.noop_tool, arguments=dict(server.noop_args))
        if called.isError:
            text = " ".join(getattr(c, "text", "") for c in called.content).strip()
            result.detail = f"{server.noop_tool} returned an error: {text[:300]}"
            return
    result.stage, result.ok = "done", True


@asynccontextmanager
async def _stdio(server: McpServer, result: Probe) -> AsyncIterator[tuple[Any, Any]]:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=expand(server.command or ""),
        args=[expand(a) for a in server.args],
        env={k: expand(v) for k, v in server.env.items()} or None,
    )
    result.stage = "connect"
    # The server's stderr goes to a file, not ours: cron mails whatever reaches stderr.
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                yield read, write
        except BaseException:
            errlog.seek(0)
            result.stderr = " ".join(errlog.read()[-300:].split())
            raise


@asynccontextmanager
async def _http(server: McpServer, kind: str, result: Probe) -> AsyncIterator[tuple[Any, Any]]:
    import httpx

    url = expand(server.url or "")
    headers = http_headers(server)
    hook = _status_hook(result)
    result.stage = "connect"
    if kind == "sse":
        from mcp.client.sse import sse_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        def factory(
            headers: dict[str, str] | None = None,
            timeout: httpx.Timeout | None = None,
            auth: httpx.Auth | None = None,
        ) -> httpx.AsyncClient:
            client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
            client.event_hooks["response"].append(hook)
            return client

        async with sse_client(url, headers=headers, httpx_client_factory=factory) as (r, w):
            yield r, w
        return
    from mcp.client.streamable_http import streamable_http_client

    client = httpx.AsyncClient(
        headers=headers,
        timeout=httpx.Timeout(PROBE_TIMEOUT_S),
        follow_redirects=True,
        event_hooks={"response": [hook]},
    )
    async with client, streamable_http_client(url, http_client=client) as (r, w, _):
        yield r, w


def _status_hook(result: Probe) -> Callable[[httpx.Response], Any]:
    async def hook(response: httpx.Response) -> None:
        # Only the first refusal counts: the SDK's closing DELETE of a dead session adds
        # its own 4xx that says nothing about the token.
        if response.status_code >= 400 and result.http_status is None:
            result.http_status = response.status_code
            result.www_authenticate = response.headers.get("www-authenticate", "")

    return hook
