"""A real MCP server, built with the official SDK (FastMCP), for mcp-watch's tests.

- stdio: ``python mcp_server.py stdio`` — what the claude CLI would spawn.
- streamable HTTP: ``HttpMcpServer(tokens=path)`` runs it in-process on an ephemeral port
  (uvicorn in a thread), behind a bearer-token gate.

Token expiry, the failure mcp-watch exists for, is driven by a JSON file the test rewrites:
``{"valid": ["tok-1"]}``. Over HTTP a token not in the list gets ``401`` with
``WWW-Authenticate: Bearer error="invalid_token"`` (what the spec requires for an expired
token). Over stdio there is no status code: the ``ping`` tool answers an error instead, which
is what a stdio server whose upstream token expired does. ``MCP_TEST_TOKENS`` names the file,
``MCP_TEST_TOKEN`` is the token the stdio server holds.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

CALLS_ENV = "MCP_TEST_CALLS"
"""A file each tool call appends one line to, so a test can count the no-op calls."""


def valid_tokens(path: Path | None) -> list[str] | None:
    if path is None:
        return None
    try:
        return list(json.loads(path.read_text()).get("valid", []))
    except FileNotFoundError:
        return []


def build(tokens: Path | None = None, held_token: str | None = None) -> FastMCP:
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("harness-test-mcp", log_level="WARNING")

    def record(name: str) -> None:
        calls = os.environ.get(CALLS_ENV)
        if calls:
            with open(calls, "a", encoding="utf-8") as handle:
                handle.write(name + "\n")

    @server.tool()
    def ping() -> str:
        """A no-op: answers pong (or fails once the held token expired)."""
        record("ping")
        allowed = valid_tokens(tokens)
        if held_token is not None and allowed is not None and held_token not in allowed:
            raise RuntimeError("upstream answered 401: token expired")
        return "pong"

    @server.tool()
    def echo(text: str) -> str:
        """Returns its input."""
        record("echo")
        return text

    return server


class _BearerGate:
    """ASGI middleware: a token not in the file gets 401 before the MCP app sees anything."""

    def __init__(self, app: Any, tokens: Path) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            auth = headers.get(b"authorization", b"").decode()
            token = auth[len("Bearer ") :] if auth.startswith("Bearer ") else ""
            if token not in (valid_tokens(self.tokens) or []):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (
                                b"www-authenticate",
                                b'Bearer error="invalid_token", '
                                b'error_description="The access token expired"',
                            ),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b'{"error":"invalid_token"}'})
                return
        await self.app(scope, receive, send)


class HttpMcpServer:
    """The streamable-HTTP variant on 127.0.0.1:<ephemeral>, in a thread of the test."""

    def __init__(self, tokens: Path | None = None) -> None:
        self.tokens = tokens
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> HttpMcpServer:
        import logging

        import uvicorn

        # The SDK's server logs a traceback at ERROR each time a client closes its GET stream
        # (a normal disconnect); it says nothing about the test.
        logging.getLogger("mcp.server.streamable_http").setLevel(logging.CRITICAL)

        app: Any = build().streamable_http_app()
        if self.tokens is not None:
            app = _BearerGate(app, self.tokens)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the test MCP server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> HttpMcpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Idp:
    """The identity provider of the tests, in one folder: ``tokens.json`` (what the server
    accepts), ``headers.json`` (what the client's ``headersHelper`` prints), ``mode`` (how the
    next refresh goes: ``ok``, ``fail`` or ``idp`` — the session itself expired, exit 77) and
    ``refresh.log`` (one line per refresh tried)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.tokens = folder / "tokens.json"
        self.headers = folder / "headers.json"
        self.mode_file = folder / "mode"
        self.log = folder / "refresh.log"

    @classmethod
    def create(cls, folder: Path) -> Idp:
        folder.mkdir(parents=True, exist_ok=True)
        idp = cls(folder)
        idp.issue("tok-1")
        idp.mode("fail")
        return idp

    def issue(self, token: str) -> None:
        valid = valid_tokens(self.tokens) or []
        self.tokens.write_text(json.dumps({"valid": [*valid, token]}))
        self.headers.write_text(json.dumps({"Authorization": f"Bearer {token}"}))

    def expire_all(self) -> None:
        self.tokens.write_text(json.dumps({"valid": []}))

    def mode(self, mode: str) -> None:
        self.mode_file.write_text(mode)

    def refreshes(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def refresh_command(self) -> str:
        return f"{sys.executable} {Path(__file__).resolve()} refresh {self.folder}"

    def helper_command(self) -> str:
        return f"cat {self.headers}"

    def refresh(self) -> int:
        """What ``refresh_command`` does: mint a new token, fail, or say the session expired."""
        with self.log.open("a") as handle:
            handle.write("refresh\n")
        mode = self.mode_file.read_text().strip()
        if mode == "ok":
            self.issue(f"tok-{self.refreshes() + 1}")
            return 0
        return 77 if mode == "idp" else 1


def main(argv: list[str]) -> None:
    if argv[:1] == ["refresh"] and len(argv) == 2:
        sys.exit(Idp(Path(argv[1])).refresh())
    if argv[:1] != ["stdio"]:
        sys.exit("usage: mcp_server.py stdio | refresh FOLDER")
    tokens = os.environ.get("MCP_TEST_TOKENS")
    build(Path(tokens) if tokens else None, os.environ.get("MCP_TEST_TOKEN")).run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
