"""How to reach one server of ``agent-config/mcp.json``, read as the claude CLI reads it: its
transport, its ``${VAR}``s expanded, its HTTP headers (static, then ``headersHelper``'s); and
what a failure to reach it says, in one line. Shared by the harness's own MCP client
(``mcp_client``) and doctor's probe (``ops/mcp_probe.py``), so both reach a server alike."""

from __future__ import annotations

import json
import os
import re
import subprocess

from harness_cli.config import McpServer

HELPER_TIMEOUT_S = 10.0
"""``headersHelper`` gets this long to print its headers."""

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ServerEntryError(Exception):
    """The server's entry cannot be used as written (a variable unset, a helper failing)."""


def expand(text: str, env: dict[str, str] | None = None) -> str:
    """``${VAR}`` and ``${VAR:-default}``, as the claude CLI expands them in mcp.json."""
    source = os.environ if env is None else env

    def one(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = source.get(name)
        if value:
            return value
        if default is not None:
            return default
        raise ServerEntryError(f"${{{name}}} is not set")

    return _VAR.sub(one, text)


def transport(server: McpServer) -> str:
    if server.type in ("http", "sse"):
        return server.type
    return "stdio" if server.command else "http"


def http_headers(server: McpServer) -> dict[str, str]:
    """Static headers (expanded), then the ``headersHelper``'s, which win."""
    headers = {k: expand(v) for k, v in server.headers.items()}
    if server.headersHelper:
        proc = subprocess.run(
            ["/bin/sh", "-c", server.headersHelper],
            capture_output=True,
            text=True,
            timeout=HELPER_TIMEOUT_S,
            check=False,
        )
        if proc.returncode != 0:
            raise ServerEntryError(
                f"headersHelper exited {proc.returncode}: {proc.stderr.strip()[-200:]}"
            )
        try:
            extra = json.loads(proc.stdout)
        except json.JSONDecodeError:
            raise ServerEntryError("headersHelper did not print a JSON object") from None
        if not isinstance(extra, dict):
            raise ServerEntryError("headersHelper did not print a JSON object")
        headers.update({str(k): str(v) for k, v in extra.items()})
    return headers


def describe(exc: BaseException) -> str:
    """The innermost, most telling error of an exception (group) in one line."""
    leaves = list(_leaves(exc))
    leaf = next((e for e in leaves if type(e).__name__ == "HTTPStatusError"), leaves[0])
    if type(leaf).__name__ == "HTTPStatusError":
        response = getattr(leaf, "response", None)
        status = getattr(response, "status_code", "?")
        return f"the server answered HTTP {status}"
    text = str(leaf).strip() or type(leaf).__name__
    return f"{type(leaf).__name__}: {text}"[:300]


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
