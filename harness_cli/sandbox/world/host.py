"""The world's HTTP host: every HTTP server on its own 127.0.0.1 port (streamable HTTP at
``/mcp``, behind a bearer token), plus a control port, all in one process (the sandbox's
child, so the SDK's ~1.5 s import never delays the sandbox itself).

Each port answers ``POST /_control/<action>`` too; the control port keeps answering when a
server has died. Actions: ``fault {kind, server, tool, transport, times, seconds, bytes}``,
``clear_faults {server?}``, ``calls {server?}``, ``state``, ``die {server}``, ``revive
{server}``, ``reset`` (faults and calls cleared, dead servers revived).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from harness_cli.sandbox.world.control import WorldControl
from harness_cli.sandbox.world.runner import HOST_TOKEN
from harness_cli.sandbox.world.servers import build

__all__ = ["Host"]

_EXPIRED = (
    b'Bearer error="invalid_token", error_description="The access token expired", '
    b'resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"'
)


class Host:
    def __init__(self, root: Path, names: list[str], ports: dict[str, int] | None = None) -> None:
        self.root, self.names = root, names
        self.control = WorldControl(root).ensure()
        self.ports = dict(ports or {})
        self.uvicorns: dict[str, uvicorn.Server] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}" + ("" if name == "_control" else "/mcp")

    async def run(self) -> dict[str, Any]:
        """Start everything; returns what the parent needs (the control URL, each server's)."""
        # The SDK logs a traceback each time a client drops its GET stream: not news here.
        logging.getLogger("mcp.server.streamable_http").setLevel(logging.CRITICAL)
        await self._serve("_control", _Gate(self, "_control", None))
        for name in self.names:
            await self.start(name)
        return {"control": self.url("_control"), "servers": {n: self.url(n) for n in self.names}}

    async def start(self, name: str) -> None:
        app: ASGIApp | None = None
        if name != "_control":
            mcp = build(name, self.root, "http", on_die=lambda: self.die(name))
            app = mcp.streamable_http_app()
        await self._serve(name, _Gate(self, name, app))

    async def _serve(self, name: str, app: ASGIApp) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.ports.get(name, 0)))
        self.ports[name] = sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="critical", lifespan="on", timeout_graceful_shutdown=1
        )
        server = uvicorn.Server(config)
        self.uvicorns[name] = server
        self.tasks[name] = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if self.tasks[name].done():
                self.tasks[name].result()
            await asyncio.sleep(0.01)

    def die(self, name: str) -> None:
        """Like a crashed process: the port closes and every open connection drops."""
        server = self.uvicorns.get(name)
        if server is None:
            return
        server.should_exit = server.force_exit = True
        for server_socket in server.servers:
            server_socket.close()
        for connection in list(server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()

    def alive(self, name: str) -> bool:
        task = self.tasks.get(name)
        return task is not None and not task.done()

    async def revive(self, name: str) -> None:
        if self.alive(name):
            return
        await self.start(name)

    async def act(self, action: str, body: dict[str, Any]) -> Any:
        if action == "fault":
            return {"ok": True, "fault": vars(self.control.add_fault(body))}
        if action == "clear_faults":
            self.control.clear(body.get("server"))
            return {"ok": True}
        if action == "calls":
            return {"calls": self.control.calls(body.get("server"))}
        if action == "state":
            return {
                "servers": {n: {"url": self.url(n), "alive": self.alive(n)} for n in self.names},
                "faults": [vars(f) for f in self.control.faults()],
                "calls": len(self.control.calls()),
            }
        if action in ("die", "revive"):
            name = body.get("server", "")
            if name not in self.names:
                raise KeyError(f"no HTTP server {name!r}: one of {', '.join(self.names)}")
            if action == "die":
                self.die(name)
            else:
                await self.revive(name)
            return {"ok": True}
        if action == "reset":
            self.control.clear()
            self.control.calls_file.unlink(missing_ok=True)
            for name in self.names:
                await self.revive(name)
            return {"ok": True}
        raise KeyError(f"unknown control action {action!r}")


class _Gate:
    """In front of one server: ``/_control/``, then the bearer token and the ``expired``
    fault (a real 401, before the MCP layer), then the server."""

    def __init__(self, host: Host, name: str, app: ASGIApp | None) -> None:
        self.host, self.name, self.app = host, name, app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" and self.app is None:
            await _bare_lifespan(receive, send)
            return
        if scope["type"] == "http" and scope["path"].startswith("/_control/"):
            await self._control(scope, receive, send)
            return
        if scope["type"] == "http" and self.app is not None:
            headers = dict(scope.get("headers") or [])
            token_ok = headers.get(b"authorization", b"") == f"Bearer {HOST_TOKEN}".encode()
            expired = self.host.control.take(self.name, None, "http", kinds=("expired",))
            if expired is not None or not token_ok:
                challenge = _EXPIRED if expired else b'Bearer error="invalid_token"'
                response = Response(
                    json.dumps({"error": "invalid_token"}),
                    status_code=401,
                    media_type="application/json",
                    headers={"WWW-Authenticate": challenge.decode()},
                )
                await response(scope, receive, send)
                return
        if self.app is None:
            await Response("not found", status_code=404)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _control(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        action = scope["path"][len("/_control/") :]
        try:
            body = await request.json() if await request.body() else {}
            result = await self.host.act(action, body if isinstance(body, dict) else {})
            response = JSONResponse(result)
        except (KeyError, ValueError, TypeError) as exc:
            response = JSONResponse({"ok": False, "error": str(exc)}, status_code=400)
        await response(scope, receive, send)


async def _bare_lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
