"""The world as the sandbox runs it: the database built, the HTTP host started as a child
process (ports chosen here, so mcp.json is known at once and nobody waits for the SDK's
import), and the ``mcpServers`` entries that point a client at every server.

This module imports neither the MCP SDK nor uvicorn: the sandbox pays only for a fork.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

from harness_cli.errors import ServiceError
from harness_cli.sandbox.world import database
from harness_cli.sandbox.world.control import WorldControl, WorldFault

__all__ = ["HOST_TOKEN", "SERVERS", "STDIO_BY_DEFAULT", "World"]

SERVERS = ("logs", "metrics", "tracker", "docs", "db")
STDIO_BY_DEFAULT = ("docs", "db")
"""In the sandbox's mcp.json these two are stdio (a local index, a local database); the
others are HTTP, as hosted Datadog and Atlassian servers are. Every server runs both ways."""
HOST_TOKEN = "world-sandbox-token-0000"
"""The bearer token the HTTP servers accept; mcp.json carries it in ``headers``."""
READY_TIMEOUT_S = 60.0
NICENESS = 10


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class World:
    """``root`` holds the database, ``control/`` (faults) and ``calls.jsonl``; ``env`` is what
    the tracker needs to reach Jira (JIRA_URL, JIRA_USER, JIRA_TOKEN)."""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = dict(env or {})
        self.control = WorldControl(root)
        self.ports = {name: _free_port() for name in ("_control", *SERVERS)}
        self._proc: subprocess.Popen[str] | None = None
        self._ready: dict[str, Any] | None = None
        self._log: IO[str] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> World:
        self.root.mkdir(parents=True, exist_ok=True)
        self.control.ensure()
        database.build(self.root / database.DB_FILE)
        self._log = open(self.root / "host.log", "a", encoding="utf-8")  # noqa: SIM115
        ports = ",".join(f"{name}={port}" for name, port in self.ports.items())
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "harness_cli.sandbox.world",
                "http",
                "--dir",
                str(self.root),
                "--servers",
                ",".join(SERVERS),
                "--ports",
                ports,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env={**os.environ, **self.env},
            # Its start-up is the SDK's import (~2 s of CPU): at low priority it takes what the
            # sandbox's own work leaves, so the demo beside it is not slowed (bench_world.py).
            preexec_fn=lambda: os.nice(NICENESS),
        )
        return self

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> dict[str, Any]:
        """Block until every HTTP server listens (the child prints one line then)."""
        if self._ready is not None:
            return self._ready
        proc = self._proc
        if proc is None or proc.stdout is None:
            raise ServiceError("the sandbox world is not started", hint="call World.start() first")
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else ""
        found = json.loads(line) if line.strip() else {}
        if not found.get("servers"):
            raise ServiceError(
                f"the sandbox world's MCP host did not start within {timeout:g} s "
                f"({found.get('error') or 'no answer'})",
                hint=f"see {self.root / 'host.log'}; `harness sandbox --no-world` runs without it",
            )
        self._ready = found
        return found

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()  # the host exits at EOF
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- where things are ------------------------------------------------------------------
    @property
    def control_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['_control']}"

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}/mcp"

    def http_entry(self, name: str) -> dict[str, Any]:
        return {
            "type": "http",
            "url": self.url(name),
            "headers": {"Authorization": f"Bearer {HOST_TOKEN}"},
        }

    def stdio_entry(self, name: str) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "command": sys.executable,
            "args": ["-m", "harness_cli.sandbox.world", "stdio", name, "--dir", str(self.root)],
        }
        if name == "tracker" and self.env:
            entry["env"] = dict(self.env)
        return entry

    def mcp_config(self, stdio: tuple[str, ...] = STDIO_BY_DEFAULT) -> dict[str, Any]:
        """The standard ``mcpServers`` file (agent-config/mcp.json) for every server."""
        return {
            "mcpServers": {
                name: self.stdio_entry(name) if name in stdio else self.http_entry(name)
                for name in SERVERS
            }
        }

    def write_mcp_config(self, path: Path, stdio: tuple[str, ...] = STDIO_BY_DEFAULT) -> Path:
        path.write_text(json.dumps(self.mcp_config(stdio), indent=2) + "\n", encoding="utf-8")
        return path

    # -- control ---------------------------------------------------------------------------
    def fault(self, kind: str, server: str = "*", **options: Any) -> WorldFault:
        """Works for both transports at once (the control folder), without the host."""
        return self.control.add_fault({"kind": kind, "server": server, **options})

    def clear_faults(self, server: str | None = None) -> None:
        self.control.clear(server)

    def calls(self, server: str | None = None) -> list[dict[str, Any]]:
        return self.control.calls(server)

    def act(self, action: str, body: dict[str, Any] | None = None) -> Any:
        """An action of the HTTP host (``die``, ``revive``, ``state``…), over its control port."""
        self.wait_ready()
        req = urllib.request.Request(
            f"{self.control_url}/_control/{action}",
            data=json.dumps(body or {}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def snapshot(self) -> dict[str, Any]:
        return {
            "control": self.control_url,
            "servers": {name: self.url(name) for name in SERVERS},
            "faults": [vars(f) for f in self.control.faults()],
            "calls": self.calls(),
            "started": self._proc is not None,
            "at": time.time(),
        }
