"""Faults and call records of the world's MCP servers, shared by both transports through one
folder (``<world dir>/control/``), so a stdio server the client spawned and the HTTP host obey
the same switches:

- ``faults.json``: a JSON list of faults (below). A stdio server reads it at each tool call; the
  HTTP host at each request. Write it by hand, or through ``POST <world url>/_control/fault``,
  or ``WorldControl.add_fault`` in-process. Matching and counting down happen under a file lock.
- ``calls.jsonl``: one line per tool call: ``{at, server, tool, transport, arguments, outcome,
  seconds}``.

A fault: ``{kind, server: "*"|name, tool: ""|name, transport: ""|"stdio"|"http", times,
seconds, bytes}``. Kinds:

- ``expired``: 401 — over HTTP a real ``401`` with ``WWW-Authenticate: Bearer
  error="invalid_token"`` (for every HTTP request while it lasts: ``times`` counts requests);
  over stdio the tool call fails with "401 Unauthorized: the access token expired".
- ``denied``: the tool call fails with "403 Forbidden: permission denied".
- ``slow``: the call answers after ``seconds``; ``hang``: it never answers (``seconds``: give up
  after that long; 0 = until the server stops).
- ``malformed``: the call "succeeds" with a cut-off JSON text that does not parse.
- ``large``: the result is padded with more lines until it is ``bytes`` long.
- ``die``: the server dies mid-call (stdio: the process exits; HTTP: the server's port closes,
  every connection drops; ``revive`` brings it back).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

__all__ = ["KINDS", "WorldControl", "WorldFault"]

KINDS = ("expired", "denied", "slow", "hang", "malformed", "large", "die")


@dataclass
class WorldFault:
    kind: str
    server: str = "*"
    tool: str = ""
    transport: str = ""
    times: int = 1
    """Calls (HTTP ``expired``: requests) it applies to; ``-1`` never runs out."""
    seconds: float = 0.0
    bytes: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}: one of {', '.join(KINDS)}")
        if self.transport not in ("", "stdio", "http"):
            raise ValueError("transport must be '', 'stdio' or 'http'")

    def matches(self, server: str, tool: str | None, transport: str) -> bool:
        """``tool=None`` is an HTTP request seen before the MCP layer (only tool-less faults)."""
        if self.server not in ("*", server) or self.transport not in ("", transport):
            return False
        return not self.tool if tool is None else self.tool in ("", tool)


class WorldControl:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "control"
        self.faults_file = self.folder / "faults.json"
        self.calls_file = root / "calls.jsonl"
        self._lock = FileLock(str(self.folder / ".lock"))

    def ensure(self) -> WorldControl:
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.faults_file.exists():
            self._write([])
        return self

    # -- faults ----------------------------------------------------------------------------
    def _read(self) -> list[WorldFault]:
        try:
            raw = json.loads(self.faults_file.read_text(encoding="utf-8") or "[]")
        except FileNotFoundError:
            return []
        return [WorldFault(**item) for item in raw]

    def _write(self, faults: list[WorldFault]) -> None:
        tmp = self.faults_file.with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(f) for f in faults], indent=1), encoding="utf-8")
        tmp.replace(self.faults_file)

    def add_fault(self, fault: WorldFault | dict[str, Any]) -> WorldFault:
        made = fault if isinstance(fault, WorldFault) else WorldFault(**fault)
        with self._lock:
            self._write([*self._read(), made])
        return made

    def clear(self, server: str | None = None) -> None:
        with self._lock:
            self._write([f for f in self._read() if server and f.server not in ("*", server)])

    def faults(self) -> list[WorldFault]:
        with self._lock:
            return self._read()

    def take(
        self, server: str, tool: str | None, transport: str, kinds: tuple[str, ...] = KINDS
    ) -> WorldFault | None:
        """The first matching fault, counted down (a file with no faults costs one stat)."""
        try:
            if self.faults_file.stat().st_size <= 2:
                return None
        except FileNotFoundError:
            return None
        with self._lock:
            faults = self._read()
            for fault in faults:
                if (
                    fault.kind in kinds
                    and fault.times != 0
                    and fault.matches(server, tool, transport)
                ):
                    if fault.times > 0:
                        fault.times -= 1
                    self._write([f for f in faults if f.times != 0])
                    return WorldFault(**{**asdict(fault), "times": 1})
        return None

    # -- calls -----------------------------------------------------------------------------
    def record(self, **entry: Any) -> None:
        line = json.dumps({"at": time.time(), **entry}, default=str)
        with self._lock, self.calls_file.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def calls(self, server: str | None = None) -> list[dict[str, Any]]:
        try:
            text = self.calls_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [r for r in rows if server in (None, r.get("server"))]
